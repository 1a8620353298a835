"""The scheduler's filters, its FailedScheduling wording, cordon and preemption."""

from __future__ import annotations

from ctl_helpers import DEPLOYMENTS, NODES, PODS, condition, deployment, events_for, pods_of

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.kube.store import clone

PRIORITYCLASSES = GroupResource("scheduling.k8s.io", "priorityclasses")
PVCS = GroupResource("", "persistentvolumeclaims")


def _pending_message(twin, prefix):
    [pod] = [p for p in pods_of(twin, prefix) if not p["spec"].get("nodeName")]
    assert pod["status"]["phase"] == "Pending"
    cond = condition(pod, "PodScheduled")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    [ev] = events_for(twin, pod["metadata"]["name"], "FailedScheduling")
    assert ev["type"] == "Warning" and ev["reportingComponent"] == "default-scheduler"  # events.k8s.io/v1
    assert ev["message"] == cond["message"]
    return ev["message"]


def _patch_node(twin, name, fn):
    n = clone(twin.store.get(NODES, "", name))
    fn(n)
    n["metadata"].pop("resourceVersion")
    twin.store.update(NODES, n)


def test_insufficient_memory(twin):
    twin.store.create(DEPLOYMENTS, deployment("big", requests={"memory": "20Gi"}))
    twin.advance(5)
    assert _pending_message(twin, "big") == (
        "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )


def test_requests_add_up_per_node(twin):
    twin.store.create(DEPLOYMENTS, deployment("fill", replicas=3, requests={"cpu": "6"}))
    twin.advance(5)
    assert {p["spec"]["nodeName"] for p in pods_of(twin, "fill")} == {
        "twin-worker-1",
        "twin-worker-2",
        "twin-worker-3",
    }
    twin.store.create(DEPLOYMENTS, deployment("more", requests={"cpu": "3"}))
    twin.advance(5)
    assert "3 Insufficient cpu" in _pending_message(twin, "more")
    # deleting a pod frees room: the pending pod is retried and scheduled
    twin.store.delete(DEPLOYMENTS, "default", "fill")
    twin.advance(5)
    assert all(p["spec"].get("nodeName") for p in pods_of(twin, "more"))


def test_node_selector_mismatch(twin):
    twin.store.create(DEPLOYMENTS, deployment("sel", nodeSelector={"kubernetes.io/hostname": "extra-node"}))
    twin.advance(5)
    assert _pending_message(twin, "sel") == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: "
        "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_required_node_affinity_picks_matching_node(twin):
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["twin-worker-3"]}
                        ]
                    }
                ]
            }
        }
    }
    twin.store.create(DEPLOYMENTS, deployment("aff", replicas=2, affinity=aff))
    twin.advance(5)
    assert {p["spec"]["nodeName"] for p in pods_of(twin, "aff")} == {"twin-worker-3"}


def test_cordon_taints_node_and_blocks_scheduling(twin):
    for n in ("twin-worker-1", "twin-worker-2"):
        _patch_node(twin, n, lambda o: o["spec"].update(unschedulable=True))
    _patch_node(
        twin,
        "twin-worker-3",
        lambda o: o["spec"].update(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
    )
    twin.advance(2)
    node = twin.store.get(NODES, "", "twin-worker-1")
    assert {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}.items() <= node["spec"][
        "taints"
    ][0].items()
    ev = events_for(twin, "twin-worker-1", "NodeNotSchedulable")
    assert ev and ev[0]["message"] == "Node twin-worker-1 status is now: NodeNotSchedulable"
    twin.store.create(DEPLOYMENTS, deployment("web"))
    twin.advance(5)
    assert _pending_message(twin, "web") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) were unschedulable. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    _patch_node(twin, "twin-worker-2", lambda o: o["spec"].update(unschedulable=False))
    twin.advance(5)
    [pod] = pods_of(twin, "web")
    assert pod["spec"]["nodeName"] == "twin-worker-2"
    assert "taints" not in twin.store.get(NODES, "", "twin-worker-2")["spec"]


def test_toleration_allows_tainted_node(twin):
    for n in ("twin-worker-1", "twin-worker-2", "twin-worker-3"):
        _patch_node(
            twin,
            n,
            lambda o: o["spec"].update(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        )
    tol = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    twin.store.create(DEPLOYMENTS, deployment("tol", tolerations=tol))
    twin.advance(5)
    assert pods_of(twin, "tol")[0]["spec"].get("nodeName")


def test_pod_anti_affinity(twin):
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "pay"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    twin.store.create(DEPLOYMENTS, deployment("pay", replicas=4, affinity=anti))
    twin.advance(10)
    placed = [p["spec"]["nodeName"] for p in pods_of(twin, "pay") if p["spec"].get("nodeName")]
    assert sorted(placed) == ["twin-worker-1", "twin-worker-2", "twin-worker-3"]
    assert _pending_message(twin, "pay") == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are "
        "available: 3 No preemption victims found for incoming pod."
    )


def test_missing_pvc_keeps_pod_pending(twin):
    vols = [{"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}}]
    twin.store.create(DEPLOYMENTS, deployment("db", volumes=vols))
    twin.advance(5)
    assert _pending_message(twin, "db") == (
        '0/3 nodes are available: persistentvolumeclaim "data-pvc" not found. preemption: 0/3 nodes are '
        "available: 3 Preemption is not helpful for scheduling."
    )
    from itbench_agents.twin.controllers.admission import admit

    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-pvc", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    twin.store.create(PVCS, admit(twin, PVCS, pvc, "CREATE"))  # gets the default class "standard"
    twin.advance(5)
    pvc = twin.store.get(PVCS, "default", "data-pvc")
    assert pvc["spec"]["storageClassName"] == "standard"
    assert pvc["status"]["phase"] == "Bound" and pvc["spec"]["volumeName"] == f"pvc-{pvc['metadata']['uid']}"
    assert pods_of(twin, "db")[0]["status"]["phase"] == "Running"


def test_priority_preemption(twin):
    twin.store.create(
        PRIORITYCLASSES,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    )
    twin.store.create(DEPLOYMENTS, deployment("low", replicas=3, requests={"cpu": "7"}))
    twin.advance(5)
    low_pods = {p["metadata"]["name"] for p in pods_of(twin, "low")}
    twin.store.create(DEPLOYMENTS, deployment("vip", requests={"cpu": "4"}, priorityClassName="high"))
    twin.advance(5)
    [vip] = pods_of(twin, "vip")
    assert vip["spec"]["priority"] == 1000
    assert vip["status"]["phase"] == "Running"
    victims = [n for n in low_pods if twin.store.get(PODS, "default", n) is None]
    assert len(victims) == 1
    [pre] = events_for(twin, victims[0], "Preempted")
    assert pre["message"] == f"Preempted by pod {vip['metadata']['uid']} on node {vip['spec']['nodeName']}"
    # the victim's replacement cannot fit anywhere now
    msg = _pending_message(twin, "low")
    assert msg.startswith("0/3 nodes are available: 3 Insufficient cpu.")


def test_unknown_priority_class_is_forbidden(twin):
    from itbench_agents.twin.controllers.admission import admit
    from itbench_agents.twin.kube.errors import ApiError

    pod = {
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {"priorityClassName": "nope", "containers": [{"name": "c", "image": "i"}]},
    }
    try:
        admit(twin, PODS, pod, "CREATE")
    except ApiError as e:
        assert e.code == 403
        assert e.message == 'pods "x" is forbidden: no PriorityClass with name nope was found'
    else:
        raise AssertionError("expected 403")


def test_not_ready_node_taints_and_evicts_after_toleration(twin):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=3))
    twin.advance(5)
    victim = pods_of(twin, "web")[0]
    sick = victim["spec"]["nodeName"]

    def not_ready(o):
        for c in o["status"]["conditions"]:
            if c["type"] == "Ready":
                c.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                )

    n = clone(twin.store.get(NODES, "", sick))
    not_ready(n)
    n["metadata"].pop("resourceVersion")
    twin.store.update(NODES, n, status_only=True)
    twin.advance(5)
    node = twin.store.get(NODES, "", sick)
    assert any(
        t["key"] == "node.kubernetes.io/not-ready" and t["effect"] == "NoExecute"
        for t in node["spec"]["taints"]
    )
    p = twin.store.get(PODS, "default", victim["metadata"]["name"])
    assert condition(p, "Ready")["status"] == "False"
    twin.advance(290)
    assert twin.store.get(PODS, "default", victim["metadata"]["name"]) is not None  # tolerated for 300 s
    twin.advance(10)
    assert events_for(twin, victim["metadata"]["name"], "TaintManagerEviction")
    # evicted = marked for deletion; the unreachable kubelet cannot confirm, so it stays Terminating
    gone = twin.store.get(PODS, "default", victim["metadata"]["name"])
    assert gone is not None and gone["metadata"].get("deletionTimestamp")
    # the replacement lands on a ready node
    live = [p for p in pods_of(twin, "web") if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 3 and all(p["spec"].get("nodeName") != sick for p in live)
    # the node comes back: its kubelet stops the pod and it is gone
    back = clone(twin.store.get(NODES, "", sick))
    for c in back["status"]["conditions"]:
        if c["type"] == "Ready":
            c.update(status="True", reason="KubeletReady", message="kubelet is posting ready status")
    back["metadata"].pop("resourceVersion")
    twin.store.update(NODES, back, status_only=True)
    twin.advance(5)
    assert twin.store.get(PODS, "default", victim["metadata"]["name"]) is None


def test_mixed_preemption_reasons_sorted_like_the_scheduler(twin):
    # one node has room problems only, two do not match the selector
    twin.store.create(
        DEPLOYMENTS,
        deployment("hog", requests={"cpu": "7"}, nodeSelector={"kubernetes.io/hostname": "twin-worker-1"}),
    )
    twin.advance(5)
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["twin-worker-1"]}
                        ]
                    }
                ]
            }
        }
    }
    twin.store.create(DEPLOYMENTS, deployment("kafka", requests={"cpu": "2"}, affinity=aff))
    twin.advance(5)
    assert _pending_message(twin, "kafka") == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )
