"""Helpers: a duck-typed twin (clock, store, health timeline) with hand-built state.

Telemetry only reads ``seed``, ``store``, ``health``, ``now()``, ``masked`` (and optionally
``app`` / ``runtime``), so these tests do not depend on the controllers or the behaviour model.
"""

from __future__ import annotations

from typing import Any

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.k8s.times import rfc3339
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.health import (
    AppHealth,
    EdgeHealth,
    HealthTimeline,
    OperationHealth,
    ServiceHealth,
    Symptom,
)
from itbench_agents.twin.kube.store import ObjectStore, clone
from itbench_agents.twin.runtime import DefaultRuntime
from itbench_agents.twin.telemetry.hub import install_telemetry

PODS = GroupResource("", "pods")
DEPLOYMENTS = GroupResource("apps", "deployments")
NODES = GroupResource("", "nodes")
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a multiple of 15 s
NS = "shop"


class FakeTwin:
    def __init__(self, seed: int = 0, start: float = T0) -> None:
        self.seed = seed
        self.clock = ManualClock(start)
        self.store = ObjectStore(self.clock.now, seed=seed)
        self.health = HealthTimeline()
        self.masked: set[str] = set()
        self.app: Any = None
        self.runtime = DefaultRuntime()
        self.metrics: Any = None
        self.logs: Any = None
        self.traces: Any = None

    def now(self) -> float:
        return self.clock.now()

    def advance(self, s: float) -> None:
        self.clock.advance(s)


# --------------------------------------------------------------------------- health builders
def op(
    service: str,
    name: str,
    rate: float,
    err: float = 0.0,
    p50: float = 10.0,
    p95: float = 30.0,
    syms: tuple[Symptom, ...] = (),
) -> OperationHealth:
    return OperationHealth(service, name, "SPAN_KIND_SERVER", rate, err, p50, p95, syms)


def chain_health(
    t: float,
    *,
    rate: float = 10.0,
    payment_err: float = 0.0,
    payment_ready: int = 1,
    p95_scale: float = 1.0,
    payment_syms: tuple[Symptom, ...] = (),
    edge_syms: tuple[Symptom, ...] = (),
) -> AppHealth:
    """load-generator → frontend (GET /api/checkout) → checkout (PlaceOrder) → payment (Charge)."""
    frac = payment_err if payment_ready else 1.0
    charge = "oteldemo.PaymentService/Charge"
    place = "oteldemo.CheckoutService/PlaceOrder"
    svcs = {
        "frontend": ServiceHealth(
            "frontend",
            1,
            1,
            (op("frontend", "GET /api/checkout", rate, frac, 40, 120 * p95_scale),),
            cpu_cores_per_pod=0.2,
            memory_bytes_per_pod=100e6,
        ),
        "checkout": ServiceHealth(
            "checkout",
            1,
            1,
            (op("checkout", place, rate, frac, 30, 100 * p95_scale),),
            cpu_cores_per_pod=0.1,
            memory_bytes_per_pod=15e6,
        ),
        "payment": ServiceHealth(
            "payment",
            payment_ready,
            1,
            (
                op(
                    "payment",
                    charge,
                    rate if payment_ready else 0.0,
                    payment_err,
                    5,
                    300 * p95_scale,
                    payment_syms,
                ),
            ),
            cpu_cores_per_pod=0.05,
            memory_bytes_per_pod=60e6,
        ),
    }
    edges = (
        EdgeHealth("load-generator", "frontend", "GET /api/checkout", rate, frac, 41, 121 * p95_scale),
        EdgeHealth("frontend", "checkout", place, rate, frac, 31, 101 * p95_scale),
        EdgeHealth("checkout", "payment", charge, rate, frac, 6, 301 * p95_scale, edge_syms),
    )
    return AppHealth(since=t, services=svcs, edges=edges, namespace=NS)


# --------------------------------------------------------------------------- object builders
def make_pod(
    name: str,
    service: str,
    *,
    node: str = "node-1",
    containers: tuple[str, ...] | None = None,
    cpu_limit: str | None = "500m",
    mem_limit: str = "256Mi",
) -> dict[str, Any]:
    names = containers or (service,)
    limits: dict[str, str] = {"memory": mem_limit}
    if cpu_limit:
        limits["cpu"] = cpu_limit
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"app.kubernetes.io/component": service},
            "ownerReferences": [{"kind": "ReplicaSet", "name": name.rsplit("-", 1)[0], "controller": True}],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": c,
                    "image": f"ghcr.io/demo:{c}",
                    "ports": [{"containerPort": 8080}],
                    "resources": {"limits": limits, "requests": {"cpu": "100m", "memory": "64Mi"}},
                }
                for c in names
            ],
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }


def running_status(
    pod: dict[str, Any], t: float, restarts: int = 0, last: dict[str, Any] | None = None, ready: bool = True
) -> dict[str, Any]:
    p = clone(pod)
    cstats = []
    for c in p["spec"]["containers"]:
        cs: dict[str, Any] = {
            "name": c["name"],
            "image": c["image"],
            "ready": ready,
            "restartCount": restarts,
            "state": {"running": {"startedAt": rfc3339(t)}},
            "lastState": {"terminated": last} if last else {},
        }
        cstats.append(cs)
    p["status"] = {
        "phase": "Running",
        "podIP": "10.244.0.7",
        "hostIP": "10.0.0.1",
        "startTime": rfc3339(t),
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": str(ready)}],
        "containerStatuses": cstats,
    }
    return p


def waiting_status(
    pod: dict[str, Any], reason: str, restarts: int, last: dict[str, Any] | None
) -> dict[str, Any]:
    p = clone(pod)
    p["status"]["phase"] = "Running"
    p["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "False"},
    ]
    p["status"]["containerStatuses"] = [
        {
            "name": c["name"],
            "image": c["image"],
            "ready": False,
            "restartCount": restarts,
            "state": {"waiting": {"reason": reason}},
            "lastState": {"terminated": last} if last else {},
        }
        for c in p["spec"]["containers"]
    ]
    return p


def terminated(
    start: float, end: float, reason: str = "Error", code: int = 1, message: str = ""
) -> dict[str, Any]:
    d = {"startedAt": rfc3339(start), "finishedAt": rfc3339(end), "reason": reason, "exitCode": code}
    if message:
        d["message"] = message
    return d


def node_obj(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": "v1.32.0"},
        },
    }


def update(twin: FakeTwin, gr: GroupResource, obj: dict[str, Any]) -> None:
    cur = twin.store.get(gr, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
    assert cur is not None
    new = clone(obj)
    new["metadata"] = {
        **cur["metadata"],
        **{k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion", "uid")},
    }
    new["metadata"].pop("resourceVersion", None)
    twin.store.update(gr, new)


def build_shop(seed: int = 0, history_s: float = 3600.0) -> FakeTwin:
    twin = FakeTwin(seed=seed)
    twin.store.create(NODES, node_obj("node-1"))
    pods = {}
    for svc in ("frontend", "checkout", "payment"):
        p = make_pod(f"{svc}-7d4b9c6f5-abcde", svc)
        twin.store.create(PODS, p)
        pods[svc] = p
    twin.advance(2)
    for p in pods.values():
        update(twin, PODS, running_status(p, twin.now()))
    twin.health.append(chain_health(twin.now()))
    install_telemetry(twin)
    twin.advance(history_s)
    return twin
