"""Pods a controller removes go the way an API DELETE takes them: Terminating (deletionTimestamp,
grace period) until their kubelet has stopped them, and never counted as replicas meanwhile."""

from __future__ import annotations

from ctl_helpers import DEPLOYMENTS, PODS, deployment, events_for, pods_of

from itbench_agents.twin.kube.store import clone


def _scale(twin, name: str, n: int) -> None:
    d = clone(twin.store.get(DEPLOYMENTS, "default", name))
    d["spec"]["replicas"] = n
    d["metadata"].pop("resourceVersion")
    twin.store.update(DEPLOYMENTS, d)


def test_scale_down_leaves_terminating_pods_until_the_kubelet_stops_them(twin) -> None:
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=3))
    twin.advance(10)
    _scale(twin, "web", 1)
    twin.sync()
    pods = pods_of(twin, "web")
    terminating = [p for p in pods if p["metadata"].get("deletionTimestamp")]
    assert len(pods) == 3 and len(terminating) == 2
    assert all(p["metadata"]["deletionGracePeriodSeconds"] == 30 for p in terminating)
    assert all(events_for(twin, p["metadata"]["name"], "Killing") for p in terminating)
    twin.advance(2)
    assert len(pods_of(twin, "web")) == 1  # gone once stopped, and not replaced


def test_a_zero_grace_period_deletes_at_once(twin) -> None:
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2, terminationGracePeriodSeconds=0))
    twin.advance(10)
    _scale(twin, "web", 1)
    twin.sync()
    assert len(pods_of(twin, "web")) == 1


def test_unscheduled_pods_go_at_once(twin) -> None:
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2, nodeSelector={"nowhere": "x"}))
    twin.advance(5)
    assert all(not p["spec"].get("nodeName") for p in pods_of(twin, "web"))
    _scale(twin, "web", 0)
    twin.sync()
    assert twin.store.list(PODS, "default") == []
