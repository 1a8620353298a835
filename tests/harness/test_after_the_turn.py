"""When the agent's turn ends (``TwinBackend.end_agent_turn``) only the harness is left: the twin's
alert rules answer states only (``twin/prometheus/states_only.py``) and kubelets post heartbeats at
a quiet past's rate. What the harness reads stays as it was; reading what is no longer kept is an
error, not a stale answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from itbench_agents.harness.backend import ProvisionRequest
from itbench_agents.harness.endstate import active_alerts
from itbench_agents.harness.firing import firing_alerts
from itbench_agents.harness.twin_backend import TwinBackend
from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.controllers.cluster import LEASE_RENEW_S, QUIET_LEASE_RENEW_S
from itbench_agents.twin.kube.store import clone

LEASES = GroupResource("coordination.k8s.io", "leases")
DEPLOYMENTS = GroupResource("apps", "deployments")


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Any:
    b = TwinBackend()
    b.provision(
        ProvisionRequest(app="otel-demo", seed=3, history_s=3600.0, folder=tmp_path_factory.mktemp("h"))
    )
    yield b
    b.close()


def _renewals(backend: TwinBackend, after: float) -> list[float]:
    twin = backend.twin
    node = twin.store.list(GroupResource("", "nodes"))[0]["metadata"]["name"]
    return [e.time for e in twin.store.log if e.gr == LEASES and e.name == node and e.time > after]


def test_after_the_turn_alerts_answer_states_and_heartbeats_go_quiet(backend: TwinBackend) -> None:
    url = backend.endpoints.prometheus_url
    backend.start_agent_turn(60.0)
    before = active_alerts(url, ["otel-demo"])
    alerts_series = requests.get(url + "/api/v1/query", params={"query": "ALERTS"}, timeout=30)
    assert alerts_series.status_code == 200  # the agent may read the ALERTS series
    backend.end_agent_turn()
    assert backend.twin.alerts.states_only
    ended = backend.now()
    backend.advance(3600.0, step=5.0)
    assert active_alerts(url, ["otel-demo"]) == before  # a healthy app: the same (none)
    assert [a["labels"]["alertname"] for a in firing_alerts(url, {"Watchdog"})] == ["Watchdog"]
    r = requests.get(url + "/api/v1/query", params={"query": "ALERTS"}, timeout=30)
    assert r.status_code == 422 and "not written once only the alerts' states are asked" in r.json()["error"]
    renewals = _renewals(backend, ended)
    assert 1 <= len(renewals) <= 2  # the one due, then one every QUIET_LEASE_RENEW_S
    assert renewals[0] - ended <= LEASE_RENEW_S
    assert QUIET_LEASE_RENEW_S > 3600.0


def test_a_catch_up_after_the_turn_is_that_of_a_twin_that_kept_asking(tmp_path: Path) -> None:
    """The same cluster with the agent's turn ended and without: after half an hour with a fault in
    place the alerts API answers the same (firing alerts, activeAt included)."""
    answers = []
    for ended in (False, True):
        b = TwinBackend()
        b.provision(ProvisionRequest(app="otel-demo", seed=5, history_s=3600.0, folder=tmp_path / str(ended)))
        try:
            twin = b.twin
            with twin.lock:
                cart = clone(twin.store.get(DEPLOYMENTS, "otel-demo", "cart"))
                cart["spec"]["replicas"] = 0
                twin.store.update(DEPLOYMENTS, cart)
            if ended:
                b.start_agent_turn(60.0)
                b.end_agent_turn()
            b.advance(1800.0, step=5.0)
            r = requests.get(b.endpoints.prometheus_url + "/api/v1/alerts", timeout=30).json()
            answers.append(sorted(r["data"]["alerts"], key=lambda a: sorted(a["labels"].items())))
        finally:
            b.close()
    assert answers[0] == answers[1]
    assert any(a["state"] == "firing" and a["labels"]["alertname"] != "Watchdog" for a in answers[0])
