"""A long pre-history (``Twin.for_app`` with more than a day, with past rollouts or without) is
quiet but for its last hour:
kubelet heartbeats are sparse until ``quiet_until`` and at the kubelet's rate from exactly then;
the big hops through it change nothing (every callback runs at its own time)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.k8s.times import parse_rfc3339
from itbench_agents.twin import instance
from itbench_agents.twin.clock import VirtualClock
from itbench_agents.twin.controllers.cluster import (
    LEASE_RENEW_S,
    NODE_STATUS_REPORT_S,
    QUIET_LEASE_RENEW_S,
    QUIET_NODE_STATUS_REPORT_S,
)
from itbench_agents.twin.instance import LOUD_PAST_S, Twin

LEASES = GroupResource("coordination.k8s.io", "leases")
NODES = GroupResource("", "nodes")
START = 1_790_000_040.0
HISTORY_S = 1.25 * 86400


def build() -> Twin:
    return Twin.for_app("otel-demo", clock=VirtualClock.paused_at(START), history_s=HISTORY_S)


@pytest.fixture(scope="module")
def twin() -> Any:
    t = build()
    yield t
    t.close()


def writes(twin: Twin, gr: GroupResource, name: str) -> list[float]:
    return [e.time for e in twin.store.log if e.gr == gr and e.name == name and e.type == "MODIFIED"]


def test_heartbeats_are_sparse_until_the_last_hour_then_at_the_kubelets_rate(twin: Twin) -> None:
    end = twin.now()
    quiet_end = end - LOUD_PAST_S
    node = twin.store.list(NODES)[0]["metadata"]["name"]
    renewals = writes(twin, LEASES, node)
    quiet = [t for t in renewals if t < quiet_end]
    loud = [t for t in renewals if t >= quiet_end]
    assert len(quiet) >= (quiet_end - START) / QUIET_LEASE_RENEW_S - 2
    assert max(b - a for a, b in zip(quiet, quiet[1:], strict=False)) <= QUIET_LEASE_RENEW_S
    assert loud[0] == quiet_end  # the loud hour starts with a renewal, not up to 10 minutes in
    assert {b - a for a, b in zip(loud, loud[1:], strict=False)} == {LEASE_RENEW_S}
    reports = [t for t in writes(twin, NODES, node) if t >= quiet_end]
    assert reports[0] == quiet_end
    assert {b - a for a, b in zip(reports, reports[1:], strict=False)} == {NODE_STATUS_REPORT_S}
    quiet_reports = [t for t in writes(twin, NODES, node) if START + 600 < t < quiet_end]
    assert 0 < len(quiet_reports) <= (quiet_end - START) / QUIET_NODE_STATUS_REPORT_S + 1
    # and at the end, as fresh as on any cluster
    heartbeat = twin.store.get(NODES, "", node)["status"]["conditions"][0]["lastHeartbeatTime"]
    assert end - parse_rfc3339(heartbeat) <= NODE_STATUS_REPORT_S
    assert twin.quiet_until is None


def test_the_hop_through_a_quiet_past_changes_nothing(twin: Twin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instance, "QUIET_STEP_S", 5.0)
    small = build()
    try:

        def log(t: Twin) -> list[tuple[Any, ...]]:
            return [(e.rv, e.type, e.gr, e.time, json.dumps(e.obj, sort_keys=True)) for e in t.store.log]

        assert log(small) == log(twin)
        assert small.now() == twin.now()
        assert small.health.at(small.now()) == twin.health.at(twin.now())
    finally:
        small.close()


@pytest.mark.slow
def test_a_long_past_with_rollouts_is_quiet_too_and_makes_the_same_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``past=True`` (seeded past rollouts, ``history.py``) over more than a day is quiet but for its
    last hour as well, and its rollouts, late dependencies and pods come out as a loud build's."""
    replicasets, pods = GroupResource("apps", "replicasets"), GroupResource("", "pods")

    def past(twin: Twin) -> tuple[list[Any], list[Any]]:
        rs = [
            (m["name"], m["annotations"].get("deployment.kubernetes.io/revision"), r["spec"].get("replicas"),
             m["creationTimestamp"])
            for r in twin.store.list(replicasets, "otel-demo")
            for m in [r["metadata"]]
        ]  # fmt: skip
        ps = [
            (p["metadata"]["name"], p["metadata"]["creationTimestamp"],
             [c.get("restartCount") for c in p["status"].get("containerStatuses") or []])
            for p in twin.store.list(pods, "otel-demo")
        ]  # fmt: skip
        return sorted(rs), sorted(ps)

    def build_past() -> tuple[tuple[list[Any], list[Any]], list[float], float]:
        t = Twin.for_app(
            "otel-demo", seed=3, clock=VirtualClock.paused_at(START), history_s=HISTORY_S, past=True
        )
        try:
            node = t.store.list(NODES)[0]["metadata"]["name"]
            assert t.history_plan.rollouts and t.quiet_until is None
            return past(t), writes(t, LEASES, node), t.now()
        finally:
            t.close()

    quiet, renewals, end = build_past()
    monkeypatch.setattr(instance, "QUIET_PAST_S", 10 * HISTORY_S)  # the same past, built loud
    loud, loud_renewals, loud_end = build_past()
    assert quiet == loud and end == loud_end
    quiet_end = end - LOUD_PAST_S
    assert max(b - a for a, b in zip(renewals, renewals[1:], strict=False) if b <= quiet_end) > LEASE_RENEW_S
    assert [t for t in renewals if t >= quiet_end] == [t for t in loud_renewals if t >= quiet_end]
    assert len(renewals) < len(loud_renewals) / 10
