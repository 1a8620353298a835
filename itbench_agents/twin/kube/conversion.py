"""Conversions between served versions of one stored resource (storage keeps the preferred version).

Only ``autoscaling/v1`` HorizontalPodAutoscalers differ from their storage version (``autoscaling/v2``):
v1 has a single ``targetCPUUtilizationPercentage`` where v2 has a list of metrics.
"""

from __future__ import annotations

from typing import Any

from ...k8s.kinds import GroupResource

Obj = dict[str, Any]
HPA = GroupResource("autoscaling", "horizontalpodautoscalers")


def _cpu_target(metrics: list[Obj]) -> int | None:
    for m in metrics or []:
        r = m.get("resource") or {}
        if m.get("type") == "Resource" and r.get("name") == "cpu":
            return (r.get("target") or r.get("current") or {}).get("averageUtilization")
    return None


def hpa_v2_to_v1(obj: Obj) -> Obj:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out: Obj = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": obj.get("metadata", {}),
    }
    v1spec: Obj = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    target = _cpu_target(spec.get("metrics") or [])
    if target is not None:
        v1spec["targetCPUUtilizationPercentage"] = target
    out["spec"] = v1spec
    if status:
        v1status: Obj = {
            k: status[k]
            for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
            if k in status
        }
        current = _cpu_target(status.get("currentMetrics") or [])
        if current is not None:
            v1status["currentCPUUtilizationPercentage"] = current
        out["status"] = v1status
    return out


def hpa_v1_to_v2(obj: Obj) -> Obj:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out: Obj = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": obj.get("metadata", {}),
    }
    v2spec: Obj = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    if spec.get("targetCPUUtilizationPercentage") is not None:
        v2spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {
                        "type": "Utilization",
                        "averageUtilization": spec["targetCPUUtilizationPercentage"],
                    },
                },
            }
        ]
    out["spec"] = v2spec
    if status:
        v2status: Obj = {
            k: status[k]
            for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
            if k in status
        }
        if status.get("currentCPUUtilizationPercentage") is not None:
            v2status["currentMetrics"] = [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]},
                    },
                }
            ]
        out["status"] = v2status
    return out


def to_served(gr: GroupResource, version: str, obj: Obj) -> Obj:
    """A stored object as the requested version serves it."""
    if gr == HPA and version == "v1":
        return hpa_v2_to_v1(obj)
    return obj


def to_storage(gr: GroupResource, version: str, obj: Obj) -> Obj:
    """A request body of ``version`` in the storage version's shape."""
    if gr == HPA and version == "v1":
        return hpa_v1_to_v2(obj)
    return obj


def needs_conversion(gr: GroupResource, version: str) -> bool:
    return gr == HPA and version == "v1"
