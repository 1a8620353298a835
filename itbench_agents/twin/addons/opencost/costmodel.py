"""What the cluster costs, computed from the twin's own history — the numbers OpenCost would derive
from Prometheus on a real cluster.

- **Containers** cost from the moment they run until they stop (the container instances of
  ``telemetry/history.py``; a Pending pod costs nothing). Their usage is the usage cAdvisor reports
  (``telemetry/cadvisor.py``'s models, so ``rate(container_cpu_usage_seconds_total)`` and the cost
  agree), their requests and limits come from the pod spec, and, as in OpenCost, what is *allocated*
  is ``max(request, usage)`` at every moment: ``cpuCoreHours = ∫ max(request, usage) dt``. The
  allocation is priced at the rates of the node it runs on (``pricing.py``, node pools included).
- **Nodes** cost ``cores × CPU + GiB × RAM (+ GPUs × GPU)`` per hour while they exist.
- **Persistent volumes** cost ``GiB × storage`` per hour while they exist, shared among the running
  pods that mount their claim (by running time), or ``__unmounted__`` when none does.

Everything is an exact integral of piecewise-constant functions (health changes are the
breakpoints), so a window of a week costs the same to compute as a window of a minute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....k8s.kinds import GroupResource
from ....k8s.quantity import parse_quantity
from ....k8s.selectors import matches_map
from ...telemetry.cadvisor import CadvisorFamily
from ...telemetry.context import TelemetryContext
from ...telemetry.history import ObjRecord
from ...telemetry.profile import Profile
from .pricing import CustomPricing, NodeRates

Obj = dict[str, Any]
PODS = GroupResource("", "pods")
NODES = GroupResource("", "nodes")
PVS = GroupResource("", "persistentvolumes")
PVCS = GroupResource("", "persistentvolumeclaims")
REPLICASETS = GroupResource("apps", "replicasets")
JOBS = GroupResource("batch", "jobs")
SERVICES = GroupResource("", "services")
GIB = float(2**30)
CLUSTER = "default-cluster"
"""OpenCost's cluster id when none is configured (``CLUSTER_ID``)."""


@dataclass
class Container:
    """One container of one pod, across its runs, with what prices it."""

    namespace: str
    pod: str
    container: str
    node: str
    controller_kind: str
    controller: str
    labels: dict[str, str]
    annotations: dict[str, str]
    services: list[str]
    cpu_request: float
    mem_request: float
    cpu_limit: float
    mem_limit: float
    starts: np.ndarray
    ends: np.ndarray
    cpu: Profile
    mem: Profile
    rates: NodeRates
    claims: list[str] = field(default_factory=list)
    """PersistentVolumeClaims the pod mounts (names in its namespace)."""

    def _clipped(self, edges: np.ndarray, now: float) -> list[np.ndarray]:
        out = []
        for s, e in zip(self.starts, self.ends, strict=True):
            out.append(np.clip(edges, s, min(e, now)))
        return out

    def per_step(self, edges: np.ndarray, now: float) -> dict[str, np.ndarray]:
        """Sums per step between consecutive ``edges``: running seconds, request/usage/allocated
        core-seconds and byte-seconds, first and last running moment."""
        n = len(edges) - 1
        run = np.zeros(n)
        cpu_use = np.zeros(n)
        mem_use = np.zeros(n)
        cpu_over = np.zeros(n)
        mem_over = np.zeros(n)
        first = np.full(n, math.inf)
        last = np.full(n, -math.inf)
        cpu_excess = _excess(self.cpu, self.cpu_request)
        mem_excess = _excess(self.mem, self.mem_request)
        for c in self._clipped(edges, now):
            d = np.diff(c)
            if not d.any():
                continue
            run += d
            cpu_use += np.diff(self.cpu.integral(c))
            mem_use += np.diff(self.mem.integral(c))
            cpu_over += np.diff(cpu_excess.integral(c))
            mem_over += np.diff(mem_excess.integral(c))
            has = d > 0
            first = np.where(has, np.minimum(first, c[:-1]), first)
            last = np.where(has, np.maximum(last, c[1:]), last)
        return {
            "run": run,
            "cpu_req": run * self.cpu_request,
            "cpu_lim": run * self.cpu_limit,
            "cpu_use": cpu_use,
            "cpu_alloc": run * self.cpu_request + cpu_over,
            "mem_req": run * self.mem_request,
            "mem_lim": run * self.mem_limit,
            "mem_use": mem_use,
            "mem_alloc": run * self.mem_request + mem_over,
            "first": first,
            "last": last,
        }

    def allocation_at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(allocated cores, allocated bytes) at times ``t``, NaN where the container is not running
        — OpenCost's ``container_cpu_allocation`` and ``container_memory_allocation_bytes``."""
        running = np.zeros(len(t), dtype=bool)
        for s, e in zip(self.starts, self.ends, strict=True):
            running |= (t >= s) & (t < e)
        cpu = np.maximum(np.nan_to_num(self.cpu.at(t)), self.cpu_request)
        mem = np.maximum(np.nan_to_num(self.mem.at(t)), self.mem_request)
        return np.where(running, cpu, np.nan), np.where(running, mem, np.nan)


def _excess(p: Profile, floor: float) -> Profile:
    """``max(p − floor, 0)`` as a profile (0 where ``p`` is undefined)."""
    if not len(p.times):
        return p
    return Profile(p.times, np.maximum(np.nan_to_num(p.values) - floor, 0.0))


@dataclass
class NodeAsset:
    name: str
    labels: dict[str, str]
    provider_id: str
    instance_type: str
    region: str
    cores: float
    ram_bytes: float
    gpus: float
    rates: NodeRates
    intervals: list[tuple[float, float]]

    @property
    def hourly(self) -> float:
        return (
            self.cores * self.rates.cpu
            + self.ram_bytes / GIB * self.rates.ram_gib
            + self.gpus * self.rates.gpu
        )

    def seconds(self, edges: np.ndarray, now: float) -> np.ndarray:
        out = np.zeros(len(edges) - 1)
        for s, e in self.intervals:
            out += np.diff(np.clip(edges, s, min(e, now)))
        return out


@dataclass
class DiskAsset:
    name: str
    provider_id: str
    storage_class: str
    claim_namespace: str
    claim_name: str
    size_bytes: float
    hourly_per_gib: float
    intervals: list[tuple[float, float]]

    def seconds(self, edges: np.ndarray, now: float) -> np.ndarray:
        out = np.zeros(len(edges) - 1)
        for s, e in self.intervals:
            out += np.diff(np.clip(edges, s, min(e, now)))
        return out


def _requests(spec: Obj) -> tuple[float, float, float, float]:
    res = spec.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    cpu_lim = parse_quantity(lim.get("cpu")) if lim.get("cpu") is not None else 0.0
    mem_lim = parse_quantity(lim.get("memory")) if lim.get("memory") is not None else 0.0
    # as Kubernetes defaults them: a limit without a request requests the limit
    cpu_req = parse_quantity(req.get("cpu")) if req.get("cpu") is not None else cpu_lim
    mem_req = parse_quantity(req.get("memory")) if req.get("memory") is not None else mem_lim
    return float(cpu_req), float(mem_req), float(cpu_lim), float(mem_lim)


class CostModel:
    """The cluster's costs over time, from the twin's history and a pricing model."""

    def __init__(self, twin: Any, pricing: CustomPricing) -> None:
        self.twin = twin
        self.pricing = pricing
        self._cache: dict[tuple[str, str], tuple[object, list[Container]]] = {}
        self._own: CadvisorFamily | None = None

    # ------------------------------------------------------------------ sources
    def _cadvisor(self) -> CadvisorFamily:
        """The cAdvisor family the twin's Prometheus serves (so cost and usage metrics agree), or one
        of this model's own for a twin without observability (a bare cluster)."""
        metrics = getattr(self.twin, "metrics", None)
        for fam in getattr(metrics, "families", ()):
            if isinstance(fam, CadvisorFamily):
                return fam
        if self._own is None:
            self._own = CadvisorFamily(TelemetryContext(self.twin))
        return self._own

    def now(self) -> float:
        return float(self.twin.now())

    def _history(self) -> Any:
        return self._cadvisor().ctx.history

    def nodes(self) -> list[NodeAsset]:
        out = []
        for rec in self._history().of(NODES):
            last = rec.latest
            if last is None:
                continue
            meta = last.get("metadata") or {}
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            cap = (last.get("status") or {}).get("capacity") or {}
            out.append(
                NodeAsset(
                    name=rec.name,
                    labels=labels,
                    provider_id=str((last.get("spec") or {}).get("providerID") or rec.name),
                    instance_type=labels.get("node.kubernetes.io/instance-type", ""),
                    region=labels.get("topology.kubernetes.io/region", ""),
                    cores=float(parse_quantity(cap.get("cpu", "0"))),
                    ram_bytes=float(parse_quantity(cap.get("memory", "0"))),
                    gpus=float(parse_quantity(cap.get("nvidia.com/gpu", "0"))),
                    rates=self.pricing.rates_for(labels),
                    intervals=rec.alive_intervals(),
                )
            )
        return sorted(out, key=lambda n: n.name)

    def disks(self) -> list[DiskAsset]:
        out = []
        for rec in self._history().of(PVS):
            last = rec.latest
            if last is None:
                continue
            spec = last.get("spec") or {}
            ref = spec.get("claimRef") or {}
            out.append(
                DiskAsset(
                    name=rec.name,
                    provider_id=rec.name,
                    storage_class=str(spec.get("storageClassName") or ""),
                    claim_namespace=str(ref.get("namespace") or ""),
                    claim_name=str(ref.get("name") or ""),
                    size_bytes=float(parse_quantity((spec.get("capacity") or {}).get("storage", "0"))),
                    hourly_per_gib=self.pricing.storage,
                    intervals=rec.alive_intervals(),
                )
            )
        return sorted(out, key=lambda d: d.name)

    def containers(self) -> list[Container]:
        """Every container that has run, with its usage and prices."""
        fam = self._cadvisor()
        ctx = fam.ctx
        hist = ctx.history
        nodes = {n.name: n for n in self.nodes()}
        services = [s for rec in hist.of(SERVICES) if (s := rec.latest) is not None]
        token = ctx.health_token()
        out: list[Container] = []
        for rec in hist.of(PODS):
            key = (rec.namespace, rec.name)
            sub = (len(rec.objs), token, id(self.pricing))
            cached = self._cache.get(key)
            if cached is None or cached[0] != sub:
                cached = (sub, self._pod_containers(fam, rec, nodes, services))
                self._cache[key] = cached
            out.extend(cached[1])
        return out

    def _pod_containers(
        self, fam: CadvisorFamily, rec: ObjRecord, nodes: dict[str, NodeAsset], services: list[Obj]
    ) -> list[Container]:
        last = rec.latest
        if last is None:
            return []
        meta = last.get("metadata") or {}
        spec = last.get("spec") or {}
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        node = str(spec.get("nodeName") or "")
        rates = nodes[node].rates if node in nodes else self.pricing.rates_for({})
        kind, ctrl = self._controller(last)
        svc_names = sorted(
            str((s.get("metadata") or {}).get("name"))
            for s in services
            if (s.get("metadata") or {}).get("namespace") == rec.namespace
            and _selects((s.get("spec") or {}).get("selector"), labels)
        )
        claims = [
            str((v.get("persistentVolumeClaim") or {}).get("claimName"))
            for v in spec.get("volumes") or []
            if (v.get("persistentVolumeClaim") or {}).get("claimName")
        ]
        by_name = {str(c.get("name")): c for c in spec.get("containers") or []}
        out = []
        for cl, cm in fam.containers(rec):
            cspec = by_name.get(cl["container"], {})
            cpu_req, mem_req, cpu_lim, mem_lim = _requests(cspec)
            out.append(
                Container(
                    namespace=rec.namespace,
                    pod=rec.name,
                    container=cl["container"],
                    node=node,
                    controller_kind=kind,
                    controller=ctrl,
                    labels=labels,
                    annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
                    services=svc_names,
                    cpu_request=cpu_req,
                    mem_request=mem_req,
                    cpu_limit=cpu_lim,
                    mem_limit=mem_lim,
                    starts=cm.starts,
                    ends=cm.ends,
                    cpu=cm.cpu_used,
                    mem=cm.mem,
                    rates=rates,
                    claims=claims,
                )
            )
        return out

    def _controller(self, pod: Obj) -> tuple[str, str]:
        """OpenCost's ``controllerKind`` (lower case) and ``controller`` of a pod."""
        owners = (pod.get("metadata") or {}).get("ownerReferences") or []
        if not owners:
            return "", ""
        o = owners[0]
        kind, name = str(o.get("kind", "")), str(o.get("name", ""))
        ns = str((pod.get("metadata") or {}).get("namespace") or "")
        parent_gr = {"ReplicaSet": REPLICASETS, "Job": JOBS}.get(kind)
        if parent_gr is not None:
            rec = self._history().get(parent_gr, ns, name)
            parent = rec.latest if rec is not None else None
            up = ((parent or {}).get("metadata") or {}).get("ownerReferences") or []
            if up and up[0].get("kind") in ("Deployment", "CronJob"):
                return str(up[0]["kind"]).lower(), str(up[0].get("name", ""))
        return kind.lower(), name


def _selects(selector: Any, labels: dict[str, str]) -> bool:
    """A Service's selector (a plain map) matches these pod labels; an empty selector selects none."""
    return isinstance(selector, dict) and matches_map(selector, labels)
