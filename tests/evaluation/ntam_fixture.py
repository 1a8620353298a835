"""The worked example of docs/metrics.md: a small otel-demo slice and the ad-failure ground truth."""

from __future__ import annotations

from typing import Any

from itbench_agents.evaluation.topology import Topology, topology_from_objects
from itbench_agents.scenario.spec import GroundTruth

NS = "otel-demo"


def _workload(name: str, uid: str) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/component": name}
    return [
        {"kind": "Deployment", "metadata": {"name": name, "namespace": NS, "uid": f"d-{uid}"}},
        {
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name}-5f7",
                "namespace": NS,
                "uid": f"r-{uid}",
                "ownerReferences": [{"kind": "Deployment", "name": name, "uid": f"d-{uid}"}],
            },
        },
        {
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-5f7-abcde",
                "namespace": NS,
                "uid": f"p-{uid}",
                "labels": labels,
                "ownerReferences": [{"kind": "ReplicaSet", "name": f"{name}-5f7", "uid": f"r-{uid}"}],
            },
            "spec": {"nodeName": "worker-1"},
        },
        {"kind": "Service", "metadata": {"name": name, "namespace": NS}, "spec": {"selector": labels}},
    ]


def topology() -> Topology:
    objs = (
        _workload("ad", "a")
        + _workload("frontend", "f")
        + _workload("frontend-proxy", "p")
        + _workload("cart", "c")
    )
    objs.append({"kind": "ConfigMap", "metadata": {"name": "flagd-config", "namespace": NS}})
    calls = [(NS, "frontend", "ad"), (NS, "frontend", "cart"), (NS, "frontend-proxy", "frontend")]
    return topology_from_objects(objs, calls)


def ground_truth() -> GroundTruth:
    def wl(svc: str, root: bool = False) -> list[dict[str, Any]]:
        return [
            {
                "id": f"{svc}-deployment",
                "kind": "Deployment",
                "namespace": NS,
                "name": svc,
                "root_cause": root,
            },
            {"id": f"{svc}-service", "kind": "Service", "namespace": NS, "name": svc, "root_cause": root},
            {
                "id": f"{svc}-pod",
                "kind": "Pod",
                "namespace": NS,
                "filter": [f"{svc}-[a-z0-9]+-[a-z0-9]+"],
                "root_cause": root,
            },
        ]

    return GroundTruth.model_validate(
        {
            "groups": wl("ad", True) + wl("frontend") + wl("frontend-proxy"),
            "aliases": [
                [f"{s}-deployment", f"{s}-service", f"{s}-pod"] for s in ("ad", "frontend", "frontend-proxy")
            ],
            "fault": [
                {
                    "entity": {"name": "ad", "kind": "Deployment", "group_id": "ad-deployment"},
                    "condition": "adFailure flag on",
                    "category": "Other",
                }
            ],
            "propagations": [
                {
                    "source": "ad-service",
                    "target": "frontend-service",
                    "condition": "ad errors",
                    "effect": "frontend errors",
                },
                {
                    "source": "frontend-service",
                    "target": "frontend-proxy-service",
                    "condition": "frontend errors",
                    "effect": "proxy 5xx",
                },
            ],
        }
    )
