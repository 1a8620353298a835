"""End to end on the twin: the Astronomy Shop is quiet when healthy; ITBench incident 23 (checkout image
that cannot be pulled) raises PendingPodsDetected within its for: window and it resolves after the fix."""

from __future__ import annotations

import copy
import json

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.httpserver import Request
from itbench_agents.twin.prometheus.server import make_prometheus_handler

DEPLOYMENTS = GroupResource("apps", "deployments")


@pytest.fixture(scope="module")
def twin():  # type: ignore[no-untyped-def]
    from itbench_agents.twin.instance import Twin

    return Twin.for_app("otel-demo", seed=1, clock=ManualClock(), history_s=900)


def _alerts(twin) -> list[dict]:  # type: ignore[no-untyped-def]
    resp = make_prometheus_handler(twin)(Request("GET", "/api/v1/alerts", {}, {}))
    assert resp.status == 200
    return json.loads(resp.body)["data"]["alerts"]  # type: ignore[arg-type]


def _set_image(twin, image: str) -> str:  # type: ignore[no-untyped-def]
    ns = twin.default_namespace()
    dep = copy.deepcopy(twin.get(DEPLOYMENTS, ns, "checkout"))
    old = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = image
    dep["metadata"].pop("resourceVersion", None)
    twin.apply([dep])
    return str(old)


def test_pending_pod_alert_fires_and_resolves(twin) -> None:  # type: ignore[no-untyped-def]
    # healthy: only kube-prometheus' Watchdog, which always fires
    assert [a["labels"]["alertname"] for a in _alerts(twin) if a["state"] == "firing"] == ["Watchdog"]
    good = _set_image(twin, "ghcr.io/open-telemetry/demo:no-such-tag-checkout")
    twin.advance(90)
    states = {(a["labels"]["alertname"], a["state"]) for a in _alerts(twin)}
    assert ("PendingPodsDetected", "pending") in states  # for: 2m not elapsed yet
    twin.advance(60)
    firing = [a for a in _alerts(twin) if a["state"] == "firing" and a["labels"]["alertname"] != "Watchdog"]
    assert [a["labels"]["alertname"] for a in firing] == ["PendingPodsDetected"]
    assert firing[0]["labels"]["service_name"] == "checkout"
    assert firing[0]["labels"]["pod"].startswith("checkout-")
    _set_image(twin, good)  # the fix
    twin.advance(120)
    assert "PendingPodsDetected" not in twin.alerts.firing_names(twin.now())
    assert any(a.name == "PendingPodsDetected" for a in twin.alerts.resolved(twin.now()))
