"""The taint eviction controller: a ``NoExecute`` taint someone puts on a node evicts the pods that
do not tolerate it (issue 26: tainting every node used to evict nothing)."""

from __future__ import annotations

import math

import pytest
from ctl_helpers import DEPLOYMENTS, NODES, PODS, condition, deployment, events_for, pods_of

from itbench_agents.twin.controllers.taint_eviction import toleration_time
from itbench_agents.twin.kube.store import clone

TAINT = {"key": "maintenance", "value": "now", "effect": "NoExecute"}


def _taint(twin, name, taints):
    n = clone(twin.store.get(NODES, "", name))
    if taints:
        n["spec"]["taints"] = taints
    else:
        n["spec"].pop("taints", None)
    n["metadata"].pop("resourceVersion")
    twin.store.update(NODES, n)


def _live(twin, prefix):
    return [p for p in pods_of(twin, prefix) if not p["metadata"].get("deletionTimestamp")]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], None),
        ([{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}], None),
        ([{"key": "maintenance", "operator": "Equal", "value": "later", "effect": "NoExecute"}], None),
        ([{"key": "maintenance", "operator": "Exists"}], math.inf),
        ([{"operator": "Exists"}], math.inf),
        ([{"key": "maintenance", "operator": "Equal", "value": "now", "tolerationSeconds": 60}], 60.0),
        ([{"key": "maintenance", "operator": "Exists", "tolerationSeconds": -5}], 0.0),
    ],
)
def test_which_tolerations_cover_a_taint(tolerations, expected) -> None:
    assert toleration_time(tolerations, [TAINT]) == expected


def test_an_untolerated_taint_evicts_at_once_and_the_pods_move(twin) -> None:
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=3))
    twin.advance(10)
    on = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods_of(twin, "web")}
    node = next(iter(on.values()))
    victims = [n for n, at in on.items() if at == node]
    others = [n for n, at in on.items() if at != node]
    _taint(twin, node, [TAINT])
    twin.advance(1)
    for name in victims:
        pod = twin.store.get(PODS, "default", name)
        assert pod is None or pod["metadata"].get("deletionTimestamp"), name
        [ev] = events_for(twin, name, "TaintManagerEviction")
        assert ev["message"] == f"Marking for deletion Pod default/{name}"
        if pod is not None:
            cond = condition(pod, "DisruptionTarget")
            assert cond and cond["reason"] == "DeletionByTaintManager"
            assert cond["message"] == "Taint manager: deleting due to NoExecute taint"
    twin.advance(60)
    for name in victims:
        assert twin.store.get(PODS, "default", name) is None  # the kubelet stopped it
    for name in others:  # pods on untainted nodes are left alone
        assert twin.store.get(PODS, "default", name)["metadata"].get("deletionTimestamp") is None
    live = _live(twin, "web")
    assert len(live) == 3 and all(p["spec"].get("nodeName") != node for p in live)


def test_a_toleration_with_seconds_delays_the_eviction_and_untainting_cancels_it(twin) -> None:
    tol = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 120}]
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=1, tolerations=tol))
    twin.advance(10)
    [pod] = pods_of(twin, "web")
    name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
    _taint(twin, node, [TAINT])
    twin.advance(100)
    assert not twin.store.get(PODS, "default", name)["metadata"].get("deletionTimestamp")
    twin.advance(30)
    assert events_for(twin, name, "TaintManagerEviction")  # 120 s after the taint
    # again on a fresh pod: this time the taint goes before the time is up
    _taint(twin, node, [])
    twin.advance(60)
    [pod] = _live(twin, "web")
    name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
    _taint(twin, node, [TAINT])
    twin.advance(60)
    _taint(twin, node, [])
    twin.advance(200)
    assert twin.store.get(PODS, "default", name)["metadata"].get("deletionTimestamp") is None
    assert not events_for(twin, name, "TaintManagerEviction")


def test_every_node_tainted_leaves_nothing_running_and_a_toleration_forever_keeps_its_pod(twin) -> None:
    forever = [{"key": "maintenance", "operator": "Exists"}]
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2))
    twin.store.create(DEPLOYMENTS, deployment("ops", replicas=1, tolerations=forever))
    twin.advance(10)
    [ops] = pods_of(twin, "ops")
    for n in ("twin-worker-1", "twin-worker-2", "twin-worker-3"):
        _taint(twin, n, [TAINT])
    twin.advance(120)
    web = pods_of(twin, "web")
    assert len(web) == 2 and all(not p["spec"].get("nodeName") for p in web)  # Pending: nowhere to go
    assert (
        twin.store.get(PODS, "default", ops["metadata"]["name"])["metadata"].get("deletionTimestamp") is None
    )


def test_tainting_every_node_breaks_the_app_it_runs() -> None:
    """Issue 26: ``NoExecute`` on every node used to leave the app serving at full traffic."""
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.instance import Twin

    app = Twin.for_app("chain", clock=ManualClock(1_750_000_000.0), history_s=0)
    app.advance(300)
    assert app.behaviour.probe().ok
    for node in app.store.list(NODES):
        _taint(app, node["metadata"]["name"], [*(node["spec"].get("taints") or []), TAINT])
    app.advance(120)
    probe = app.behaviour.probe()
    assert not probe.ok, probe.detail
