"""Deployment → ReplicaSet → Pods: hashes, revisions, rolling updates, undo, restart, scaling."""

from __future__ import annotations

import re

from ctl_helpers import DEPLOYMENTS, REPLICASETS, condition, deployment, events_for, pods_of

from itbench_agents.twin.kube.store import clone
from itbench_agents.twin.runtime import ContainerVerdict


def _update(twin, gr, ns, name, fn):
    obj = clone(twin.store.get(gr, ns, name))
    fn(obj)
    obj["metadata"].pop("resourceVersion", None)
    return twin.store.update(gr, obj)


def _set_image(twin, name, image):
    """Change the image of the first container of Deployment ``name`` (a new pod template)."""
    return _update(
        twin,
        DEPLOYMENTS,
        "default",
        name,
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image=image),
    )


def _rs(twin, name):
    return [
        r for r in twin.store.list(REPLICASETS, "default") if r["metadata"]["name"].startswith(name + "-")
    ]


def test_deployment_creates_hashed_replicaset_and_ready_pods(twin):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=3))
    twin.advance(10)
    [rs] = _rs(twin, "web")
    h = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{6,10}", h)
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": h}
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    pods = pods_of(twin, "web")
    assert len(pods) == 3
    for p in pods:
        assert re.fullmatch(rf"web-{h}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", p["metadata"]["name"])
        assert p["status"]["phase"] == "Running"
        assert p["metadata"]["ownerReferences"][0] == {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rs["metadata"]["name"],
            "uid": rs["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    d = twin.store.get(DEPLOYMENTS, "default", "web")
    st = d["status"]
    assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"], st["availableReplicas"]) == (
        3,
        3,
        3,
        3,
    )
    assert st["observedGeneration"] == d["metadata"]["generation"]
    assert condition(d, "Available")["reason"] == "MinimumReplicasAvailable"
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    [ev] = events_for(twin, "web", "ScalingReplicaSet")
    assert ev["message"] == f"Scaled up replica set web-{h} from 0 to 3"
    assert ev["source"]["component"] == "deployment-controller"


def test_same_template_gives_same_hash_across_twins(runtime):
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.instance import Twin

    names = []
    for seed in (1, 2):
        t = Twin(seed=seed, clock=ManualClock())
        t.store.create(DEPLOYMENTS, deployment("web"))
        t.advance(2)
        names.append(_rs(t, "web")[0]["metadata"]["name"])
    assert names[0] == names[1]


def test_rolling_update_respects_surge_and_unavailability(twin):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=4))
    twin.advance(10)
    _set_image(twin, "web", "registry.example/app:2.0")
    max_total = 0
    for _ in range(40):
        twin.advance(0.5)
        total = sum(r["spec"]["replicas"] for r in _rs(twin, "web"))
        max_total = max(max_total, total)
        available = sum(r.get("status", {}).get("availableReplicas", 0) for r in _rs(twin, "web"))
        assert available >= 3  # maxUnavailable 25% of 4 = 1
    assert max_total == 5  # maxSurge 25% of 4 rounds up to 1
    rss = sorted(
        _rs(twin, "web"), key=lambda r: r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
    )
    assert [r["spec"]["replicas"] for r in rss] == [0, 4]
    d = twin.store.get(DEPLOYMENTS, "default", "web")
    assert d["status"]["updatedReplicas"] == 4 and d["status"]["replicas"] == 4
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    msgs = [e["message"] for e in events_for(twin, "web", "ScalingReplicaSet")]
    assert any(
        m.startswith(f"Scaled down replica set {rss[0]['metadata']['name']} from 4 to 3") for m in msgs
    )


def test_stuck_rollout_keeps_old_pods_and_hits_progress_deadline(twin, runtime):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2))
    twin.advance(10)
    runtime.rules["app"] = lambda pod, c, now: (
        ContainerVerdict(pull_error=f'Failed to pull image "{c["image"]}": not found')
        if c["image"].endswith(":bad")
        else ContainerVerdict()
    )
    _set_image(twin, "web", "registry.example/app:bad")
    twin.advance(60)
    d = twin.store.get(DEPLOYMENTS, "default", "web")
    assert d["status"]["availableReplicas"] == 2  # old pods kept (maxUnavailable 0 for 2 replicas)
    assert condition(d, "Progressing")["reason"] == "ReplicaSetUpdated"
    twin.advance(600)
    d = twin.store.get(DEPLOYMENTS, "default", "web")
    prog = condition(d, "Progressing")
    assert prog["status"] == "False" and prog["reason"] == "ProgressDeadlineExceeded"
    new_rs = max(
        _rs(twin, "web"), key=lambda r: r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
    )
    assert prog["message"] == f'ReplicaSet "{new_rs["metadata"]["name"]}" has timed out progressing.'


def test_undo_reuses_old_replicaset_with_next_revision(twin):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2))
    twin.advance(10)
    [rs1] = _rs(twin, "web")
    _set_image(twin, "web", "registry.example/app:2.0")
    twin.advance(30)
    # what `kubectl rollout undo` does: copy the old RS template (minus the hash label) into the deployment
    old_tpl = clone(rs1["spec"]["template"])
    del old_tpl["metadata"]["labels"]["pod-template-hash"]
    _update(twin, DEPLOYMENTS, "default", "web", lambda d: d["spec"].update(template=old_tpl))
    twin.advance(30)
    rs1 = twin.store.get(REPLICASETS, "default", rs1["metadata"]["name"])
    ann = rs1["metadata"]["annotations"]
    assert ann["deployment.kubernetes.io/revision"] == "3"
    assert ann["deployment.kubernetes.io/revision-history"] == "1"
    assert rs1["spec"]["replicas"] == 2
    assert len(_rs(twin, "web")) == 2
    d = twin.store.get(DEPLOYMENTS, "default", "web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert all(
        p["spec"]["containers"][0]["image"] == "registry.example/app:1.0" for p in pods_of(twin, "web")
    )


def test_restart_annotation_rolls_pods_and_history_limit(twin):
    d = deployment("web", replicas=1)
    d["spec"]["revisionHistoryLimit"] = 1
    twin.store.create(DEPLOYMENTS, d)
    twin.advance(5)
    for i in range(3):
        _update(
            twin,
            DEPLOYMENTS,
            "default",
            "web",
            lambda d, i=i: (
                d["spec"]["template"]["metadata"]
                .setdefault("annotations", {})
                .update({"kubectl.kubernetes.io/restartedAt": f"2026-01-01T00:0{i}:00Z"})
            ),
        )
        twin.advance(20)
    rss = _rs(twin, "web")
    assert len(rss) == 2  # the current one + 1 of history
    assert sorted(int(r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]) for r in rss) == [
        3,
        4,
    ]
    [pod] = pods_of(twin, "web")
    assert pod["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] == "2026-01-01T00:02:00Z"


def test_scale_down_and_up(twin):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=3))
    twin.advance(10)
    _update(twin, DEPLOYMENTS, "default", "web", lambda d: d["spec"].update(replicas=1))
    twin.advance(5)
    assert len(pods_of(twin, "web")) == 1
    [rs] = _rs(twin, "web")
    assert len(events_for(twin, rs["metadata"]["name"], "SuccessfulDelete")) == 2
    _update(twin, DEPLOYMENTS, "default", "web", lambda d: d["spec"].update(replicas=0))
    twin.advance(5)
    assert pods_of(twin, "web") == []
    d = twin.store.get(DEPLOYMENTS, "default", "web")
    assert "replicas" not in d["status"] and condition(d, "Available")["status"] == "True"


def test_recreate_strategy_kills_old_pods_first(twin):
    d = deployment("web", replicas=2)
    d["spec"]["strategy"] = {"type": "Recreate"}
    twin.store.create(DEPLOYMENTS, d)
    twin.advance(10)
    _set_image(twin, "web", "registry.example/app:2.0")
    twin.sync()
    images = set()
    for _ in range(20):
        twin.advance(0.5)
        images.add(frozenset(p["spec"]["containers"][0]["image"] for p in pods_of(twin, "web")))
    assert not any(len(s) == 2 for s in images)  # never both versions at once
    assert {p["spec"]["containers"][0]["image"] for p in pods_of(twin, "web")} == {"registry.example/app:2.0"}


def test_paused_deployment_does_not_roll(twin):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=1))
    twin.advance(5)
    _update(twin, DEPLOYMENTS, "default", "web", lambda d: d["spec"].update(paused=True))
    _set_image(twin, "web", "registry.example/app:2.0")
    twin.advance(10)
    assert len(_rs(twin, "web")) == 1
    d = twin.store.get(DEPLOYMENTS, "default", "web")
    assert condition(d, "Progressing")["reason"] == "DeploymentPaused"
    _update(twin, DEPLOYMENTS, "default", "web", lambda d: d["spec"].update(paused=False))
    twin.advance(20)
    assert len(_rs(twin, "web")) == 2
    assert (
        condition(twin.store.get(DEPLOYMENTS, "default", "web"), "Progressing")["reason"]
        == "NewReplicaSetAvailable"
    )


def test_scaling_during_stuck_rollout_is_proportional(twin, runtime):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=4))
    twin.advance(10)
    runtime.rules["app"] = lambda pod, c, now: (
        ContainerVerdict(pull_error="Failed to pull image: not found")
        if c["image"].endswith(":bad")
        else ContainerVerdict()
    )
    _set_image(twin, "web", "registry.example/app:bad")
    twin.advance(30)
    by_rev = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r for r in _rs(twin, "web")}
    assert (by_rev["1"]["spec"]["replicas"], by_rev["2"]["spec"]["replicas"]) == (3, 2)
    _update(twin, DEPLOYMENTS, "default", "web", lambda d: d["spec"].update(replicas=8))
    twin.advance(5)
    by_rev = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r for r in _rs(twin, "web")}
    # 10 allowed (8 + 25 % surge): the 5 extra replicas are shared 3:2
    assert (by_rev["1"]["spec"]["replicas"], by_rev["2"]["spec"]["replicas"]) == (6, 4)
    assert all(
        r["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "8"
        for r in by_rev.values()
    )
