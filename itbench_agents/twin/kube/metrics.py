"""metrics.k8s.io/v1beta1 PodMetrics and NodeMetrics, computed from the runtime's usage hook
(what metrics-server reports; ``kubectl top`` reads it)."""

from __future__ import annotations

from typing import Any

from ...k8s.kinds import GroupResource
from ...k8s.times import rfc3339

Obj = dict[str, Any]
PODS = GroupResource("", "pods")
NODES = GroupResource("", "nodes")
API_VERSION = "metrics.k8s.io/v1beta1"
NODE_BASELINE_CPU = 0.08  # system daemons' share not attributed to pods (cores)
NODE_BASELINE_MEM = 600 * 2**20  # bytes


def cpu_str(cores: float) -> str:
    return f"{max(0, round(cores * 1e9))}n"


def mem_str(b: float) -> str:
    return f"{max(0, round(b / 1024))}Ki"


def _running(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get(
        "deletionTimestamp"
    )


def _pod_usage(twin: Any, pod: Obj, now: float) -> list[tuple[str, float, float]]:
    running = {
        cs.get("name")
        for cs in (pod.get("status") or {}).get("containerStatuses") or []
        if "running" in (cs.get("state") or {})
    }
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        if c.get("name") not in running:
            continue
        u = twin.runtime.usage(pod, c, now)
        out.append((str(c.get("name")), float(u.cpu_cores), float(u.memory_bytes)))
    return out


def pod_metrics(twin: Any, pod: Obj, now: float) -> Obj | None:
    if not _running(pod):
        return None
    meta = pod["metadata"]
    return {
        "kind": "PodMetrics",
        "apiVersion": API_VERSION,
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "creationTimestamp": rfc3339(now),
            "labels": meta.get("labels") or {},
        },
        "timestamp": rfc3339(now - 10),
        "window": "15.022s",
        "containers": [
            {"name": n, "usage": {"cpu": cpu_str(cpu), "memory": mem_str(mem)}}
            for n, cpu, mem in _pod_usage(twin, pod, now)
        ],
    }


def node_metrics(twin: Any, node: Obj, now: float) -> Obj:
    name = node["metadata"]["name"]
    cpu, mem = NODE_BASELINE_CPU, float(NODE_BASELINE_MEM)
    for pod in twin.store.list(PODS):
        if (pod.get("spec") or {}).get("nodeName") == name and _running(pod):
            for _, c, m in _pod_usage(twin, pod, now):
                cpu += c
                mem += m
    return {
        "kind": "NodeMetrics",
        "apiVersion": API_VERSION,
        "metadata": {
            "name": name,
            "creationTimestamp": rfc3339(now),
            "labels": node["metadata"].get("labels") or {},
        },
        "timestamp": rfc3339(now - 10),
        "window": "20.05s",
        "usage": {"cpu": cpu_str(cpu), "memory": mem_str(mem)},
    }
