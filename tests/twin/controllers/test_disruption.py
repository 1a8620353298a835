"""The disruption controller writes PodDisruptionBudget status as kube-controller-manager does, and
the eviction subresource spends it (issue 26: a budget without status showed 0 allowed disruptions,
a false lead, and no eviction was ever refused)."""

from __future__ import annotations

from typing import Any

import pytest
from ctl_helpers import DEPLOYMENTS, PODS, condition, deployment, events_for, pods_of

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.controllers.disruption import go_label_selector, scaled_value
from itbench_agents.twin.kube.errors import ApiError
from itbench_agents.twin.kube.pdb import PDBS, check_eviction
from itbench_agents.twin.kube.pod_deletion import delete_pod
from itbench_agents.twin.kube.store import clone

Obj = dict[str, Any]
DAEMONSETS = GroupResource("apps", "daemonsets")


def _pdb(name: str = "web-pdb", selector: Obj | None = None, **spec: Any) -> Obj:
    body: Obj = {"selector": {"matchLabels": {"app": "web"}} if selector is None else selector, **spec}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def _status(twin, name: str = "web-pdb") -> Obj:
    return twin.store.get(PDBS, "default", name)["status"]  # type: ignore[no-any-return]


def _counts(st: Obj) -> tuple[int, int, int, int]:
    return st["expectedPods"], st["desiredHealthy"], st["currentHealthy"], st["disruptionsAllowed"]


def _running(twin, name: str = "web", replicas: int = 3) -> None:
    twin.store.create(DEPLOYMENTS, deployment(name, replicas=replicas))
    twin.advance(30)


def _scale(twin, name: str, replicas: int) -> None:
    d = clone(twin.store.get(DEPLOYMENTS, "default", name))
    d["spec"]["replicas"] = replicas
    d["metadata"].pop("resourceVersion")
    twin.store.update(DEPLOYMENTS, d)


@pytest.mark.parametrize(
    ("spec", "counts"),
    [
        ({"maxUnavailable": 1}, (3, 2, 3, 1)),
        ({"maxUnavailable": "50%"}, (3, 1, 3, 2)),  # 1.5 unavailable rounds up to 2
        ({"minAvailable": "50%"}, (3, 2, 3, 1)),  # 1.5 available rounds up to 2
        ({"minAvailable": 3}, (3, 3, 3, 0)),
        ({"minAvailable": 5}, (3, 5, 3, 0)),
        ({"maxUnavailable": 0}, (3, 3, 3, 0)),
        ({}, (0, 0, 3, 0)),  # neither: no pod is expected, so no disruption is allowed
    ],
)
def test_status_follows_the_budget_and_the_pods(twin, spec: Obj, counts: tuple[int, ...]) -> None:
    _running(twin)
    twin.store.create(PDBS, _pdb(**spec))
    twin.advance(1)
    st = _status(twin)
    assert _counts(st) == counts
    assert st["observedGeneration"] == 1
    [cond] = st["conditions"]
    allowed = counts[3] > 0
    assert cond["type"] == "DisruptionAllowed" and cond["status"] == ("True" if allowed else "False")
    assert cond["reason"] == ("SufficientPods" if allowed else "InsufficientPods")


def test_a_scale_change_reaches_the_status_through_the_pods(twin) -> None:
    _running(twin)
    twin.store.create(PDBS, _pdb(maxUnavailable=1))
    twin.advance(1)
    _scale(twin, "web", 5)
    twin.advance(30)
    assert _counts(_status(twin)) == (5, 4, 5, 1)
    _scale(twin, "web", 1)
    twin.advance(60)
    assert _counts(_status(twin)) == (1, 0, 1, 1)


def test_a_budget_that_selects_nothing_says_so(twin) -> None:
    twin.store.create(PDBS, _pdb(selector={"matchLabels": {"app": "nothing"}}, minAvailable=1))
    twin.advance(1)
    assert _counts(_status(twin)) == (0, 1, 0, 0)
    [ev] = events_for(twin, "web-pdb", "NoPods")
    assert ev["type"] == "Normal" and ev["message"] == "No matching pods found"
    assert ev["source"]["component"] == "controllermanager"


def test_a_controller_without_scale_fails_safe(twin) -> None:
    ds = deployment("web")
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    twin.store.create(DAEMONSETS, ds)
    twin.advance(30)
    twin.store.create(PDBS, _pdb(maxUnavailable=1))
    twin.advance(1)
    st = _status(twin)
    assert st["disruptionsAllowed"] == 0
    cond = condition({"status": st}, "DisruptionAllowed")
    assert cond is not None and cond["reason"] == "SyncFailed"
    assert cond["message"] == "daemonsets.apps does not implement the scale subresource"
    [ev] = events_for(twin, "web-pdb", "CalculateExpectedPodCountFailed")
    assert ev["type"] == "Warning"


def test_bare_pods_are_unmanaged_for_a_scaled_budget(twin) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-bare", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.0"}]},
    }
    twin.store.create(PODS, pod)
    twin.advance(30)
    twin.store.create(PDBS, _pdb(maxUnavailable=1))
    twin.advance(1)
    assert _counts(_status(twin)) == (0, 0, 1, 0)
    [ev] = events_for(twin, "web-pdb", "UnmanagedPods")
    assert "(selector: &LabelSelector{MatchLabels:map[string]string{app: web,}," in ev["message"]
    twin.store.delete(PDBS, "default", "web-pdb")
    twin.store.create(PDBS, _pdb(minAvailable=1))  # an integer minAvailable counts the pods
    twin.advance(1)
    assert _counts(_status(twin)) == (1, 1, 1, 0)


def test_an_eviction_spends_the_budget_until_the_replacement_is_ready(twin) -> None:
    _running(twin)
    twin.store.create(PDBS, _pdb(maxUnavailable=1))
    twin.advance(1)
    first, second = pods_of(twin, "web")[:2]
    check_eviction(twin.store, first, twin.now(), dry_run=False)
    st = _status(twin)
    assert st["disruptionsAllowed"] == 0 and list(st["disruptedPods"]) == [first["metadata"]["name"]]
    assert condition({"status": st}, "DisruptionAllowed")["reason"] == "InsufficientPods"  # type: ignore[index]
    with pytest.raises(ApiError) as refused:
        check_eviction(twin.store, second, twin.now(), dry_run=False)
    body = refused.value.status()
    assert body["code"] == 429 and body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget web-pdb needs 2 healthy pods and has 3 currently",
        }
    ]
    delete_pod(twin.store, twin.store.get(PODS, "default", first["metadata"]["name"]))
    twin.advance(60)  # the pod is gone and its replacement ready
    st = _status(twin)
    assert _counts(st) == (3, 2, 3, 1) and "disruptedPods" not in st
    check_eviction(twin.store, second, twin.now(), dry_run=False)


def test_an_eviction_never_carried_out_is_forgotten_after_two_minutes(twin) -> None:
    _running(twin)
    twin.store.create(PDBS, _pdb(maxUnavailable=1))
    twin.advance(1)
    pod = pods_of(twin, "web")[0]
    check_eviction(twin.store, pod, twin.now(), dry_run=False)  # ... and no delete follows
    twin.advance(1)
    assert _counts(_status(twin)) == (3, 2, 2, 0)
    twin.advance(125)
    assert _counts(_status(twin)) == (3, 2, 3, 1)
    assert events_for(twin, pod["metadata"]["name"], "NotDeleted")


def test_what_the_budget_does_not_guard(twin) -> None:
    _running(twin)
    twin.store.create(PDBS, _pdb(minAvailable=3))
    twin.advance(1)
    pod = pods_of(twin, "web")[0]
    with pytest.raises(ApiError):
        check_eviction(twin.store, pod, twin.now(), dry_run=True)
    unready = clone(pod)
    unready["status"]["conditions"] = [
        {**c, "status": "False"} if c["type"] == "Ready" else c for c in unready["status"]["conditions"]
    ]
    check_eviction(twin.store, unready, twin.now(), dry_run=False)  # not healthy, budget holds
    pending = clone(pod)
    pending["status"]["phase"] = "Pending"
    check_eviction(twin.store, pending, twin.now(), dry_run=False)
    twin.store.create(PDBS, _pdb("second", minAvailable=1))
    twin.advance(1)
    with pytest.raises(ApiError) as refused:
        check_eviction(twin.store, pod, twin.now(), dry_run=False)
    assert refused.value.code == 500 and "more than one PodDisruptionBudget" in refused.value.message
    assert _status(twin)["disruptionsAllowed"] == 0  # nothing was spent


def test_a_spec_change_not_yet_seen_is_retried_later(twin) -> None:
    _running(twin)
    twin.store.create(PDBS, _pdb(maxUnavailable=1))
    twin.advance(1)
    pdb = clone(twin.store.get(PDBS, "default", "web-pdb"))
    pdb["spec"]["maxUnavailable"] = 2
    pdb["metadata"].pop("resourceVersion")
    changed = twin.store.update(PDBS, pdb)  # the controller has not run yet
    assert changed["metadata"]["generation"] == 2
    with pytest.raises(ApiError) as refused:
        check_eviction(twin.store, pods_of(twin, "web")[0], twin.now(), dry_run=False)
    assert refused.value.code == 429
    assert refused.value.details["retryAfterSeconds"] == 10  # type: ignore[index]
    twin.advance(1)
    assert _status(twin)["observedGeneration"] == 2 and _status(twin)["disruptionsAllowed"] == 2


def test_go_formatting_helpers() -> None:
    assert scaled_value("34%", 3) == 2 and scaled_value(2, 10) == 2
    sel = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}],
    }
    assert go_label_selector(sel) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
        "MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
    )
