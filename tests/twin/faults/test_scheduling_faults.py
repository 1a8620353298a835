"""Faults that act through the control plane (quota admission, scheduler, HPA) on the chain app.

The controllers decide *whether* pods exist and where they run; the behaviour model turns missing
or Pending pods into the right symptoms on the right services.
"""

from __future__ import annotations

import pytest
from faultkit import DAEMONSETS, DEPLOYMENTS, HPAS, NODES, PODS, PRIORITY, PVCS, QUOTAS, Cluster, healed

from itbench_agents.k8s.quantity import parse_quantity


@pytest.mark.parametrize(
    ("hard", "says"),
    [
        ({"memory": "100Mi"}, "exceeded quota: q, requested: memory"),
        ({"pods": "3"}, "exceeded quota: q, requested: pods=1"),
    ],
    ids=["memory", "pods"],
)
def test_resource_quota_too_low_blocks_pod_creation(chain: Cluster, hard: dict, says: str) -> None:
    chain.create(
        QUOTAS,
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": hard}},
    )
    chain.scale("c", 0)
    chain.advance(20)
    chain.scale("c", 1)
    chain.advance(60)
    assert chain.pods("c") == []
    msgs = [
        e.get("message", "")
        for e in chain.twin.store.list(chain_events(), chain.ns)
        if e.get("reason") == "FailedCreate"
    ]
    assert any(says in m for m in msgs), msgs
    assert chain.degraded() == {"a", "b"}
    chain.delete(QUOTAS, "q")
    healed(chain, 180)


def chain_events():  # noqa: ANN201
    from faultkit import EVENTS

    return EVENTS


def test_nonexistent_node_selector_leaves_pod_pending(chain: Cluster) -> None:
    chain.recreate_strategy("b")
    chain.template(
        "b", lambda spec: spec.__setitem__("nodeSelector", {"kubernetes.io/hostname": "invalid-node-1"})
    )
    chain.advance(60)
    assert [p["status"]["phase"] for p in chain.pods("b")] == ["Pending"]
    assert any("didn't match Pod's node affinity/selector" in m for m in chain.events("FailedScheduling"))
    assert chain.degraded() == {"a"}
    chain.template("b", lambda spec: spec.pop("nodeSelector"))
    healed(chain, 120.0)


def test_cordoned_node_blocks_the_extra_replica_only(chain: Cluster) -> None:
    node = chain.pods("b")[0]["spec"]["nodeName"]
    chain.template("b", lambda spec: spec.__setitem__("nodeSelector", {"kubernetes.io/hostname": node}))
    chain.advance(60)
    chain.edit(NODES, node, lambda n: n["spec"].__setitem__("unschedulable", True), ns="")
    chain.scale("b", 2)
    chain.advance(60)
    phases = sorted(p["status"]["phase"] for p in chain.pods("b"))
    assert phases == ["Pending", "Running"]
    assert any("were unschedulable" in m for m in chain.events("FailedScheduling"))
    assert not chain.degraded(), "the existing replica keeps serving"
    chain.edit(NODES, node, lambda n: n["spec"].__setitem__("unschedulable", False), ns="")
    chain.advance(60)
    assert sorted(p["status"]["phase"] for p in chain.pods("b")) == ["Running", "Running"]
    assert chain.health()["b"].ready_pods == 2


def test_pod_anti_affinity_unschedulable(chain: Cluster) -> None:
    chain.create(
        DAEMONSETS,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "application-operator"},
            "spec": {
                "selector": {"matchLabels": {"app.kubernetes.io/name": "application-operator"}},
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": "application-operator"}},
                    "spec": {
                        "containers": [
                            {"name": "op", "image": "busybox:1.37", "command": ["sleep", "infinity"]}
                        ]
                    },
                },
            },
        },
    )
    chain.recreate_strategy("c")
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {
                                "key": "app.kubernetes.io/name",
                                "operator": "In",
                                "values": ["application-operator"],
                            }
                        ]
                    },
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    chain.template("c", lambda spec: spec.__setitem__("affinity", anti))
    chain.advance(90)
    assert [p["status"]["phase"] for p in chain.pods("c")] == ["Pending"]
    assert any("anti-affinity" in m for m in chain.events("FailedScheduling"))
    assert chain.degraded() == {"a", "b"}
    chain.template("c", lambda spec: spec.pop("affinity"))
    healed(chain, 120.0)


def test_nonexistent_pvc_leaves_pod_pending(chain: Cluster) -> None:
    chain.recreate_strategy("b")

    def mount(spec: dict) -> None:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "b-data"}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data/database"}]

    chain.template("b", mount)
    chain.advance(60)
    assert [p["status"]["phase"] for p in chain.pods("b")] == ["Pending"]
    assert any('persistentvolumeclaim "b-data" not found' in m for m in chain.events("FailedScheduling"))
    assert chain.degraded() == {"a"}
    # creating the claim is a valid fix too (the binder provisions it)
    chain.create(
        PVCS,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "b-data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "standard",
                "resources": {"requests": {"storage": "25Mi"}},
            },
        },
    )
    healed(chain, 300)


def test_priority_preemption_evicts_the_low_priority_workload(chain: Cluster) -> None:
    chain.create(
        PRIORITY,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "application-critical"},
            "value": 10000,
        },
    )
    chain.create(
        PRIORITY,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "application-non-critical"},
            "value": 1,
        },
    )
    node = chain.pods("c")[0]["spec"]["nodeName"]

    def pin(spec: dict) -> None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        spec["priorityClassName"] = "application-non-critical"

    chain.template("c", pin)
    chain.advance(60)
    assert chain.pods("c")[0]["spec"]["nodeName"] == node and not chain.degraded()
    kept_m = sum(  # CPU requests that preemption cannot free (system-critical pods on the node)
        int(parse_quantity(c.get("resources", {}).get("requests", {}).get("cpu", "0")) * 1000)
        for p in chain.twin.store.list(PODS)
        if p["spec"].get("nodeName") == node and int(p["spec"].get("priority", 0) or 0) > 10000
        for c in p["spec"]["containers"]
    )
    share_m = (8000 - kept_m) // 4
    chain.create(
        DEPLOYMENTS,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "critical-data-collector"},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"app": "critical-data-collector"}},
                "template": {
                    "metadata": {"labels": {"app": "critical-data-collector"}},
                    "spec": {
                        "priorityClassName": "application-critical",
                        "nodeSelector": {"kubernetes.io/hostname": node},
                        "containers": [
                            {
                                "name": "collector",
                                "image": "busybox:1.37",
                                "command": ["sleep", "infinity"],
                                # 4 of these fill the node up to what higher-priority pods (CoreDNS) leave
                                "resources": {"requests": {"cpu": f"{share_m}m"}},
                            }
                        ],
                    },
                },
            },
        },
    )
    chain.advance(120)
    assert any("Preempted by pod" in m for m in chain.events("Preempted"))
    assert [p["status"]["phase"] for p in chain.pods("c")] == ["Pending"]
    assert chain.degraded() == {"a", "b"}
    chain.delete(DEPLOYMENTS, "critical-data-collector")
    healed(chain, 180)


def test_misconfigured_hpa_scales_to_max_without_breaking_traffic(chain: Cluster) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "b"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b"},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 20}},
                }
            ],
        },
    }
    chain.create(HPAS, hpa)
    chain.advance(600)
    assert chain.get(DEPLOYMENTS, "b")["spec"]["replicas"] == 10
    assert chain.health()["b"].ready_pods == 10
    assert not chain.degraded()

    def relax(h: dict) -> None:
        h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = 70

    chain.edit(HPAS, "b", relax)
    chain.advance(900)
    assert chain.get(DEPLOYMENTS, "b")["spec"]["replicas"] < 10
    assert (
        len([p for p in chain.twin.store.list(PODS, chain.ns) if p["metadata"]["name"].startswith("b-")]) < 10
    )
