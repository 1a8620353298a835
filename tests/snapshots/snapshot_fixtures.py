"""A small recorded cluster, built in code: a namespace, a Deployment with one pod, a Chaos Mesh CRD
and experiment, events, metric samples, log lines, traces, alerts and rules."""

from __future__ import annotations

from typing import Any

from itbench_agents.k8s.times import rfc3339
from itbench_agents.twin.faults.chaos import chaos_crds
from itbench_agents.twin.replay import Recording
from itbench_agents.twin.telemetry.sources import LogStream, Span, Trace

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
NS = "shop"
POD_UID = "0b0b0b0b-0000-4000-8000-00000000beef"


def objects() -> list[dict[str, Any]]:
    created = rfc3339(NOW - 3600)
    return [
        *chaos_crds(),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "creationTimestamp": created}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "cart", "namespace": NS, "creationTimestamp": created, "generation": 3},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "cart"}},
                "template": {
                    "metadata": {"labels": {"app": "cart"}},
                    "spec": {"containers": [{"name": "cart", "image": "shop/cart:2.0"}]},
                },
            },
            "status": {"replicas": 1, "readyReplicas": 0, "observedGeneration": 3},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "cart-7d4b9c-x2x2x",
                "namespace": NS,
                "uid": POD_UID,
                "creationTimestamp": rfc3339(NOW - 600),
                "labels": {"app": "cart"},
            },
            "spec": {"containers": [{"name": "cart", "image": "shop/cart:2.0"}], "nodeName": "twin-worker-1"},
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "cart",
                        "ready": False,
                        "restartCount": 7,
                        "image": "shop/cart:2.0",
                        "imageID": "",
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    }
                ],
            },
        },
        {
            "apiVersion": "chaos-mesh.org/v1alpha1",
            "kind": "PodChaos",
            "metadata": {"name": "kill-cart", "namespace": NS, "creationTimestamp": rfc3339(NOW - 500)},
            "spec": {"action": "pod-kill", "mode": "one", "selector": {"namespaces": [NS]}},
        },
    ]


def events() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "cart-7d4b9c-x2x2x.17a", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": "cart-7d4b9c-x2x2x", "namespace": NS},
            "reason": "BackOff",
            "message": "Back-off restarting failed container cart",
            "type": "Warning",
            "count": 7,
            "lastTimestamp": rfc3339(NOW - 30),
        }
    ]


def series() -> list[tuple[dict[str, str], list[int], list[float]]]:
    ts = [int((NOW - 60 + 15 * i) * 1000) for i in range(5)]
    return [
        (
            {
                "__name__": "kube_pod_container_status_restarts_total",
                "namespace": NS,
                "pod": "cart-7d4b9c-x2x2x",
            },
            ts,
            [3.0, 4.0, 5.0, 6.0, 7.0],
        ),
        ({"__name__": "up", "job": "kubelet"}, ts, [1.0] * 5),
    ]


def streams() -> list[LogStream]:
    base = int((NOW - 120) * 1e9)
    return [
        LogStream(
            {"namespace": NS, "pod": "cart-7d4b9c-x2x2x", "container": "cart", "service_name": "cart"},
            [(base + i * 1_000_000_123, f"panic: redis: connection refused ({i})") for i in range(3)],
        )
    ]


def traces() -> list[Trace]:
    start = int((NOW - 90) * 1e6)
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    root = Span(
        tid,
        "00f067aa0ba902b7",
        None,
        "frontend",
        "GET /api/cart",
        start,
        50_000,
        "server",
        error=True,
        tags={"http.method": "GET", "http.status_code": 500},
        process_tags={"k8s.pod.name": "frontend-0"},
    )
    child = Span(
        tid,
        "00f067aa0ba902b8",
        root.span_id,
        "frontend",
        "oteldemo.CartService/GetCart",
        start + 1_000,
        40_000,
        "client",
        error=True,
        tags={"rpc.system": "grpc"},
        logs=[(start + 2_000, {"event": "error", "message": "connection refused"})],
        process_tags={"k8s.pod.name": "frontend-0"},
    )
    return [Trace(tid, [root, child])]


def alerts() -> list[dict[str, Any]]:
    return [
        {
            "labels": {"alertname": "HighRequestErrorRate", "namespace": NS, "service_name": "frontend"},
            "annotations": {"summary": "frontend is failing"},
            "state": "firing",
            "activeAt": rfc3339(NOW - 240),
            "value": "5e-01",
        }
    ]


def recording() -> Recording:
    return Recording(
        now=NOW,
        objects=objects() + events(),
        alerts=alerts(),
        rule_groups=[{"name": "shop", "file": "shop.yaml", "rules": [], "interval": 15}],
        series=series(),
        streams=streams(),
        traces=traces(),
        dependencies=[("frontend", "cart", 120)],
        namespace=NS,
    )
