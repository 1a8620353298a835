"""The rightsizing recommender of ``finops-heuristic`` (``agents/finops_heuristic/rightsize.py``):
what it changes for an eager HPA, idle replicas and over-provisioned containers — and what it leaves
alone."""

from __future__ import annotations

from typing import Any

from itbench_agents.agents.finops_heuristic.rightsize import plan

MI = 2**20


def dep(name: str, replicas: int, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": containers}}},
        "status": {"readyReplicas": replicas},
    }


def c(
    name: str, cpu: str | None = None, mem: str | None = None, lim: dict[str, str] | None = None
) -> dict[str, Any]:
    req = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v}
    return {"name": name, "resources": {"requests": req, **({"limits": lim} if lim else {})}}


def hpa(name: str, util: int, lo: int, hi: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": name},
            "minReplicas": lo,
            "maxReplicas": hi,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": util},
                    },
                }
            ],
        },
    }


def test_an_eager_hpa_gets_a_realistic_target_and_its_deployment_is_left_to_it() -> None:
    changes = plan("shop", [hpa("accounting", 5, 1, 8)], [dep("accounting", 8, [c("accounting", "250m")])],
                   {("accounting", "accounting"): {"cpu_use": 0.4, "cpu_req": 2.0, "mem_use": 0, "mem_req": 0}})  # fmt: skip
    (ch,) = changes
    assert ch.entity == "shop/HorizontalPodAutoscaler/accounting"
    assert '"averageUtilization": 80' in ch.commands[0] and '"maxReplicas": 3' in ch.commands[0]


def test_idle_replicas_are_scaled_to_what_their_usage_needs() -> None:
    (ch,) = plan("shop", [], [dep("ad", 12, [c("ad", "50m")])],
                 {("ad", "ad"): {"cpu_use": 0.03, "cpu_req": 0.6, "mem_use": 0, "mem_req": 0}})  # fmt: skip
    assert ch.commands == ["scale deployment ad -n shop --replicas=1"]


def test_over_provisioned_containers_are_rightsized_and_modest_ones_left_alone() -> None:
    deps = [
        dep("recommendation", 1, [c("recommendation", "1500m", lim={"cpu": "2"})]),
        dep("fraud-detection", 1, [c("fraud-detection", mem="6Gi", lim={"memory": "8Gi"})]),
        dep("cart", 1, [c("cart", "100m", "128Mi")]),
    ]
    usage = {
        ("recommendation", "recommendation"): {"cpu_use": 0.02, "cpu_req": 1.5, "mem_use": 0, "mem_req": 0},
        ("fraud-detection", "fraud-detection"): {
            "cpu_use": 0.01,
            "cpu_req": 0,
            "mem_use": 300 * MI,
            "mem_req": 6144 * MI,
        },
        ("cart", "cart"): {"cpu_use": 0.001, "cpu_req": 0.1, "mem_use": MI, "mem_req": 128 * MI},
    }
    changes = {ch.entity: ch.commands for ch in plan("shop", [], deps, usage)}
    assert changes == {
        "shop/Deployment/recommendation": [
            "set resources deployment recommendation -n shop -c recommendation --requests=cpu=50m --limits=cpu=200m"
        ],
        "shop/Deployment/fraud-detection": [
            "set resources deployment fraud-detection -n shop -c fraud-detection --requests=memory=608Mi --limits=memory=1216Mi"
        ],
    }


def test_nothing_to_do_on_an_efficient_namespace() -> None:
    assert plan("shop", [hpa("web", 80, 1, 5)], [dep("web", 2, [c("web", "500m")])],
                {("web", "web"): {"cpu_use": 0.8, "cpu_req": 1.0, "mem_use": 0, "mem_req": 0}}) == []  # fmt: skip
