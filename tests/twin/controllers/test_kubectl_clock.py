"""The twin's clock as real kubectl sees it (issue 11): ``kubectl describe`` computes event ages from
the local wall clock, so a twin whose fast-forwards put it ahead of that clock printed ``<invalid>``.
A served app twin ends its history ``DEFAULT_LEAD_S`` behind the wall clock and fast-forwards eat
into that lead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.kubectl_cluster import KUBECTL, run_kubectl

from itbench_agents.twin.clock import DEFAULT_LEAD_S, VirtualClock
from itbench_agents.twin.instance import Twin


def _seconds(age: str) -> float:
    total = 0.0
    for n, unit in re.findall(r"(\d+)([dhms])", age):
        total += int(n) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[unit]
    return total


def test_fast_forwards_eat_into_the_lead_and_describe_ages_stay_valid(tmp_path: Path) -> None:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl not installed")
    tw = Twin.for_app("chain", seed=0, history_s=120)
    try:
        assert isinstance(tw.clock, VirtualClock)
        assert tw.clock.lag() == pytest.approx(DEFAULT_LEAD_S, abs=5)
        ep = tw.serve(tmp_path)

        def kubectl(*args: str) -> str:
            return run_kubectl(ep.kubeconfig, "-n", "chain", *args, check=True).stdout

        tw.advance(600)  # the harness waiting for alerts
        kubectl("rollout", "restart", "deployment/b")
        tw.advance(120)  # an agent's `wait`
        assert tw.clock.lag() > 0, "still not ahead of the wall clock"
        pod = kubectl("get", "pods", "-l", "app=b", "--sort-by=.metadata.creationTimestamp", "-o", "name")
        desc = kubectl("describe", pod.split()[-1])
        events = desc.split("Events:", 1)[1].strip().splitlines()[2:]
        assert events, desc
        assert not any("<invalid>" in e or "<unknown>" in e for e in events), events
        # describe (client clock) = get events (server clock) + the remaining lead, never less
        server = kubectl("get", "events", "--field-selector", f"involvedObject.name={pod.split('/')[-1]}")
        server_ages = [_seconds(line.split()[0]) for line in server.strip().splitlines()[1:]]
        client_ages = [_seconds(e.split()[2]) for e in events]
        assert min(client_ages) >= min(server_ages)
        assert min(client_ages) - min(server_ages) <= tw.clock.lag() + 60
    finally:
        tw.close()
