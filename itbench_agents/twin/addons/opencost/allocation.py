"""OpenCost allocations: per-container sets for each step of a window, aggregation, idle, accumulation
and the JSON OpenCost writes (``core/pkg/opencost/allocation.go``, ``allocation_json.go``).

Semantics kept from OpenCost:

- A container allocation is named ``cluster/node/namespace/pod/container``; aggregating by
  properties names the result by their values joined with ``/`` (``__unallocated__`` where an
  allocation lacks one), ``__idle__`` holds what nodes cost beyond what was allocated,
  ``__unmounted__`` what volumes no running pod mounts cost.
- Adding two allocations sums hours and costs and spans both time ranges: averages are re-derived
  as ``hours / (minutes / 60)`` of the merged range, so a namespace's ``cpuCoreRequestAverage`` is
  the sum of its containers' requests while they ran side by side.
- Efficiency is ``usage / request`` (1 when there is usage or cost but no request, else 0);
  ``totalEfficiency`` weighs CPU and RAM efficiency by their costs.
- Numbers are rounded to 5 decimals; NaN and infinities are ``null``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from .costmodel import CLUSTER, GIB, Container, CostModel, DiskAsset, NodeAsset
from .filters import Predicate

IDLE = "__idle__"
UNALLOCATED = "__unallocated__"
UNMOUNTED = "__unmounted__"
AGGREGATE_PROPS = (
    "cluster",
    "node",
    "namespace",
    "controllerKind",
    "controller",
    "service",
    "pod",
    "container",
    "deployment",
    "statefulset",
    "daemonset",
    "job",
)
_HOURS = ("cpuCoreHours", "cpuReq", "cpuLim", "cpuUse", "ramByteHours", "ramReq", "ramLim", "ramUse")
_COSTS = ("cpuCost", "ramCost", "gpuCost", "gpuHours", "pvByteHours", "pvCost", "cpuCostIdle", "ramCostIdle")


@lru_cache(maxsize=8192)
def rfc3339(t: float) -> str:
    """Go's RFC 3339 (whole seconds, UTC); a response repeats the same few step bounds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _num(f: float) -> float | None:
    return round(f * 100000) / 100000.0 if math.isfinite(f) else None


@dataclass
class Allocation:
    name: str
    props: dict[str, Any]
    window: tuple[float, float]
    start: float
    end: float
    v: dict[str, float] = field(default_factory=dict)
    """Hours (core-hours, byte-hours of request, limit, usage, allocation) and costs."""
    pvs: dict[str, dict[str, float | str]] = field(default_factory=dict)

    @property
    def minutes(self) -> float:
        return max(self.end - self.start, 0.0) / 60.0

    def get(self, key: str) -> float:
        return self.v.get(key, 0.0)

    def add(self, other: Allocation) -> None:
        """OpenCost's ``Allocation.Add``: sums, the union of time ranges, properties in common."""
        self.start = min(self.start, other.start)
        self.end = max(self.end, other.end)
        self.window = (min(self.window[0], other.window[0]), max(self.window[1], other.window[1]))
        for k, x in other.v.items():
            self.v[k] = self.v.get(k, 0.0) + x
        for k, pv in other.pvs.items():
            mine = self.pvs.setdefault(
                k, {"byteHours": 0.0, "cost": 0.0, "providerID": pv["providerID"], "adjustment": 0.0}
            )
            mine["byteHours"] = float(mine["byteHours"]) + float(pv["byteHours"])
            mine["cost"] = float(mine["cost"]) + float(pv["cost"])
        self.props = _common(self.props, other.props)

    def _avg(self, hours_key: str) -> float:
        h = self.minutes / 60.0
        return self.get(hours_key) / h if h > 0 else 0.0

    def cpu_efficiency(self) -> float:
        req, use = self._avg("cpuReq"), self._avg("cpuUse")
        if req > 0:
            return use / req
        return 0.0 if use == 0 or self.get("cpuCost") == 0 else 1.0

    def ram_efficiency(self) -> float:
        req, use = self._avg("ramReq"), self._avg("ramUse")
        if req > 0:
            return use / req
        return 0.0 if use == 0 or self.get("ramCost") == 0 else 1.0

    def total_cost(self) -> float:
        return (
            self.get("cpuCost")
            + self.get("ramCost")
            + self.get("gpuCost")
            + self.get("pvCost")
            + self.get("sharedCost")
            + self.get("externalCost")
        )

    def total_efficiency(self, cpu_eff: float | None = None, ram_eff: float | None = None) -> float:
        """CPU and memory efficiency weighted by their costs (pass them in when already computed)."""
        cpu, ram = self.get("cpuCost"), self.get("ramCost")
        if cpu + ram > 0:
            cpu_e = self.cpu_efficiency() if cpu_eff is None else cpu_eff
            ram_e = self.ram_efficiency() if ram_eff is None else ram_eff
            return (cpu_e * cpu + ram_e * ram) / (cpu + ram)
        return 0.0

    def to_json(self) -> dict[str, Any]:
        h = self.minutes / 60.0
        g = self.get

        def per_hour(key: str) -> float:
            return g(key) / h if h > 0 else 0.0

        cpu_eff, ram_eff = self.cpu_efficiency(), self.ram_efficiency()
        cpu_cost, ram_cost = g("cpuCost"), g("ramCost")
        total_eff = self.total_efficiency(cpu_eff, ram_eff)
        pv_bytes = per_hour("pvByteHours")
        return {
            "name": self.name,
            "properties": {k: v for k, v in self.props.items() if v not in ("", None, [], {})},
            "window": {"start": rfc3339(self.window[0]), "end": rfc3339(self.window[1])},
            "start": rfc3339(self.start),
            "end": rfc3339(self.end),
            "minutes": _num(self.minutes),
            "cpuCores": _num(per_hour("cpuCoreHours")),
            "cpuCoreRequestAverage": _num(per_hour("cpuReq")),
            "cpuCoreLimitAverage": _num(per_hour("cpuLim")),
            "cpuCoreUsageAverage": _num(per_hour("cpuUse")),
            "cpuCoreHours": _num(g("cpuCoreHours")),
            "cpuCost": _num(cpu_cost),
            "cpuCostAdjustment": 0.0,
            "cpuCostIdle": _num(g("cpuCostIdle")),
            "cpuEfficiency": _num(cpu_eff),
            "gpuCount": _num(per_hour("gpuHours")),
            "gpuHours": _num(g("gpuHours")),
            "gpuCost": _num(g("gpuCost")),
            "gpuCostAdjustment": 0.0,
            "gpuCostIdle": 0.0,
            "gpuEfficiency": 0.0,
            "networkTransferBytes": 0.0,
            "networkReceiveBytes": 0.0,
            "networkCost": 0.0,
            "networkCrossZoneCost": 0.0,
            "networkCrossRegionCost": 0.0,
            "networkInternetCost": 0.0,
            "networkCostAdjustment": 0.0,
            "loadBalancerCost": 0.0,
            "loadBalancerCostAdjustment": 0.0,
            "pvBytes": _num(pv_bytes),
            "pvByteHours": _num(g("pvByteHours")),
            "pvCost": _num(g("pvCost")),
            "pvs": {
                k: {
                    "byteHours": _num(float(p["byteHours"])),
                    "cost": _num(float(p["cost"])),
                    "providerID": p["providerID"],
                    "adjustment": 0.0,
                }
                for k, p in sorted(self.pvs.items())
            }
            or None,
            "pvCostAdjustment": 0.0,
            "ramBytes": _num(per_hour("ramByteHours")),
            "ramByteRequestAverage": _num(per_hour("ramReq")),
            "ramByteLimitAverage": _num(per_hour("ramLim")),
            "ramByteUsageAverage": _num(per_hour("ramUse")),
            "ramByteHours": _num(g("ramByteHours")),
            "ramCost": _num(ram_cost),
            "ramCostAdjustment": 0.0,
            "ramCostIdle": _num(g("ramCostIdle")),
            "ramEfficiency": _num(ram_eff),
            "externalCost": _num(g("externalCost")),
            "sharedCost": _num(g("sharedCost")),
            "totalCost": _num(self.total_cost()),
            "totalEfficiency": _num(total_eff),
            "proportionalAssetResourceCosts": {},
            "lbAllocations": None,
            "sharedCostBreakdown": {},
            "gpuAllocation": None,
        }


def _common(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in a.items():
        w = b.get(k)
        if isinstance(v, dict) and isinstance(w, dict):
            shared = {kk: vv for kk, vv in v.items() if w.get(kk) == vv}
            if shared:
                out[k] = shared
        elif isinstance(v, list) and isinstance(w, list):
            both = [x for x in v if x in w]
            if both:
                out[k] = both
        elif v == w:
            out[k] = v
    return out


def container_props(c: Container) -> dict[str, Any]:
    return {
        "cluster": CLUSTER,
        "node": c.node,
        "container": c.container,
        "controller": c.controller,
        "controllerKind": c.controller_kind,
        "namespace": c.namespace,
        "pod": c.pod,
        "services": list(c.services),
        "providerID": c.node,
        "labels": dict(c.labels),
        "annotations": dict(c.annotations),
    }


def filter_getter(props: dict[str, Any]) -> Any:
    def get(field_name: str, key: str) -> Any:
        if field_name == "controllerName":
            return props.get("controller")
        if field_name == "label":
            return (props.get("labels") or {}).get(key)
        if field_name == "annotation":
            return (props.get("annotations") or {}).get(key)
        return props.get(field_name)

    return get


@dataclass
class StepSet:
    window: tuple[float, float]
    allocations: dict[str, Allocation]


def compute_sets(
    model: CostModel,
    edges: np.ndarray,
    *,
    keep: Predicate | None = None,
    include_idle: bool = False,
    share_idle: bool = False,
) -> list[StepSet]:
    """One set of container allocations per step between ``edges`` (plus ``__idle__`` and
    ``__unmounted__`` where they apply)."""
    now = model.now()
    n = len(edges) - 1
    sets = [StepSet((float(edges[i]), float(edges[i + 1])), {}) for i in range(n)]
    containers = model.containers()
    nodes = model.nodes()
    disks = model.disks()
    alloc_cpu_cost = np.zeros(n)
    alloc_ram_cost = np.zeros(n)
    running_claims: dict[tuple[str, str], list[tuple[Container, np.ndarray]]] = {}
    rows: list[tuple[Container, dict[str, np.ndarray]]] = []
    for c in containers:
        s = c.per_step(edges, now)
        if not s["run"].any():
            continue
        rows.append((c, s))
        alloc_cpu_cost += s["cpu_alloc"] / 3600.0 * c.rates.cpu
        alloc_ram_cost += s["mem_alloc"] / 3600.0 / GIB * c.rates.ram_gib
        for claim in c.claims:
            running_claims.setdefault((c.namespace, claim), []).append((c, s["run"]))
    pv_share = _pv_shares(disks, running_claims, edges, now)
    for c, s in rows:
        props = container_props(c)
        if keep is not None and not keep(filter_getter(props)):
            continue
        name = f"{CLUSTER}/{c.node}/{c.namespace}/{c.pod}/{c.container}"
        for i in np.nonzero(s["run"])[0]:
            v = {
                "cpuCoreHours": s["cpu_alloc"][i] / 3600.0,
                "cpuReq": s["cpu_req"][i] / 3600.0,
                "cpuLim": s["cpu_lim"][i] / 3600.0,
                "cpuUse": s["cpu_use"][i] / 3600.0,
                "cpuCost": s["cpu_alloc"][i] / 3600.0 * c.rates.cpu,
                "ramByteHours": s["mem_alloc"][i] / 3600.0,
                "ramReq": s["mem_req"][i] / 3600.0,
                "ramLim": s["mem_lim"][i] / 3600.0,
                "ramUse": s["mem_use"][i] / 3600.0,
                "ramCost": s["mem_alloc"][i] / 3600.0 / GIB * c.rates.ram_gib,
            }
            a = Allocation(name, props, sets[i].window, float(s["first"][i]), float(s["last"][i]), v)
            for disk, share in pv_share.get((c.namespace, c.pod, c.container), []):
                _add_pv(a, disk, share[i])
            sets[i].allocations[name] = a
    # volumes no running pod mounts
    for disk, secs in pv_share.get(("", "", UNMOUNTED), []):
        for i in np.nonzero(secs)[0]:
            um = sets[i].allocations.get(UNMOUNTED)
            if um is None:
                w = sets[i].window
                um = Allocation(
                    UNMOUNTED, {"cluster": CLUSTER, "namespace": UNMOUNTED}, w, w[0], min(w[1], now)
                )
                if keep is not None and not keep(filter_getter(um.props)):
                    continue
                sets[i].allocations[UNMOUNTED] = um
            _add_pv(um, disk, secs[i])
    if include_idle or share_idle:
        _idle(sets, nodes, edges, now, alloc_cpu_cost, alloc_ram_cost, share_idle)
    return sets


def _add_pv(a: Allocation, disk: DiskAsset, seconds: float) -> None:
    if seconds <= 0:
        return
    byte_hours = disk.size_bytes * seconds / 3600.0
    cost = byte_hours / GIB * disk.hourly_per_gib
    a.v["pvByteHours"] = a.get("pvByteHours") + byte_hours
    a.v["pvCost"] = a.get("pvCost") + cost
    key = f"{CLUSTER}/{disk.name}"
    pv = a.pvs.setdefault(
        key, {"byteHours": 0.0, "cost": 0.0, "providerID": disk.provider_id, "adjustment": 0.0}
    )
    pv["byteHours"] = float(pv["byteHours"]) + byte_hours
    pv["cost"] = float(pv["cost"]) + cost


def _pv_shares(
    disks: list[DiskAsset],
    running: dict[tuple[str, str], list[tuple[Container, np.ndarray]]],
    edges: np.ndarray,
    now: float,
) -> dict[tuple[str, str, str], list[tuple[DiskAsset, np.ndarray]]]:
    """Seconds of each volume charged to each container (split by running time among the mounting
    containers of a step), and to ``__unmounted__`` for steps where none ran."""
    out: dict[tuple[str, str, str], list[tuple[DiskAsset, np.ndarray]]] = {}
    for d in disks:
        alive = d.seconds(edges, now)
        if not alive.any():
            continue
        users = running.get((d.claim_namespace, d.claim_name), []) if d.claim_name else []
        total = np.zeros(len(alive))
        for _, run in users:
            total += run
        for c, run in users:
            share = np.divide(alive * run, total, out=np.zeros(len(alive)), where=total > 0)
            out.setdefault((c.namespace, c.pod, c.container), []).append((d, share))
        orphan = np.where(total > 0, 0.0, alive)
        if orphan.any():
            out.setdefault(("", "", UNMOUNTED), []).append((d, orphan))
    return out


def _idle(
    sets: list[StepSet],
    nodes: list[NodeAsset],
    edges: np.ndarray,
    now: float,
    alloc_cpu_cost: np.ndarray,
    alloc_ram_cost: np.ndarray,
    share: bool,
) -> None:
    n = len(sets)
    node_cpu_cost, node_ram_cost = np.zeros(n), np.zeros(n)
    node_core_h, node_byte_h = np.zeros(n), np.zeros(n)
    for nd in nodes:
        secs = nd.seconds(edges, now)
        node_cpu_cost += secs / 3600.0 * nd.cores * nd.rates.cpu
        node_ram_cost += secs / 3600.0 * nd.ram_bytes / GIB * nd.rates.ram_gib
        node_core_h += secs / 3600.0 * nd.cores
        node_byte_h += secs / 3600.0 * nd.ram_bytes
    # what nodes cost beyond what was allocated; never negative (allocations over capacity leave none)
    idle_cpu = np.maximum(node_cpu_cost - alloc_cpu_cost, 0.0)
    idle_ram = np.maximum(node_ram_cost - alloc_ram_cost, 0.0)
    for i, st in enumerate(sets):
        if idle_cpu[i] <= 0 and idle_ram[i] <= 0:
            continue
        if share:
            cpu_total = sum(a.get("cpuCost") for a in st.allocations.values())
            ram_total = sum(a.get("ramCost") for a in st.allocations.values())
            for a in st.allocations.values():
                ci = idle_cpu[i] * a.get("cpuCost") / cpu_total if cpu_total > 0 else 0.0
                ri = idle_ram[i] * a.get("ramCost") / ram_total if ram_total > 0 else 0.0
                a.v["cpuCost"] = a.get("cpuCost") + ci
                a.v["ramCost"] = a.get("ramCost") + ri
                a.v["cpuCostIdle"] = a.get("cpuCostIdle") + ci
                a.v["ramCostIdle"] = a.get("ramCostIdle") + ri
            continue
        w = st.window
        end = min(w[1], now)
        if end <= w[0]:
            continue
        cpu_rate = node_cpu_cost[i] / node_core_h[i] if node_core_h[i] > 0 else 0.0
        ram_rate = node_ram_cost[i] / node_byte_h[i] if node_byte_h[i] > 0 else 0.0
        st.allocations[IDLE] = Allocation(
            IDLE,
            {"cluster": CLUSTER},
            w,
            w[0],
            end,
            {
                "cpuCost": float(idle_cpu[i]),
                "ramCost": float(idle_ram[i]),
                "cpuCoreHours": float(idle_cpu[i] / cpu_rate) if cpu_rate > 0 else 0.0,
                "ramByteHours": float(idle_ram[i] / ram_rate) if ram_rate > 0 else 0.0,
            },
        )


def aggregate_key(a: Allocation, props: list[str]) -> str:
    if a.name in (IDLE, UNMOUNTED):
        return a.name
    parts = [_prop_value(a.props, p) for p in props]
    return "/".join(parts)


def _prop_value(props: dict[str, Any], prop: str) -> str:
    if prop.startswith("label:") or prop.startswith("annotation:"):
        kind, _, key = prop.partition(":")
        v = (props.get("labels" if kind == "label" else "annotations") or {}).get(key)
        return str(v) if v else UNALLOCATED
    if prop == "controller":
        ckind, cname = props.get("controllerKind"), props.get("controller")
        return f"{ckind}:{cname}" if cname else UNALLOCATED
    if prop in ("deployment", "statefulset", "daemonset", "job"):
        return (
            str(props.get("controller"))
            if props.get("controllerKind") == prop and props.get("controller")
            else UNALLOCATED
        )
    if prop == "service":
        svcs = props.get("services") or []
        return str(svcs[0]) if svcs else UNALLOCATED
    v = props.get(prop)
    return str(v) if v else UNALLOCATED


def parse_aggregate(text: str | None) -> list[str]:
    """``aggregate=namespace,label:app`` → the properties; ``ValueError`` for one OpenCost lacks."""
    if not text:
        return []
    out = []
    for raw in text.split(","):
        p = raw.strip()
        if p in AGGREGATE_PROPS or p == "all":
            out.append(p)
            continue
        if (p.startswith("label:") or p.startswith("annotation:")) and p.partition(":")[2]:
            out.append(p)
            continue
        raise ValueError(f"unrecognized aggregation property: {p}")
    return ["cluster"] if out == ["all"] else [p for p in out if p != "all"]


def aggregate(st: StepSet, props: list[str]) -> StepSet:
    if not props:
        return st
    out: dict[str, Allocation] = {}
    for a in st.allocations.values():
        key = aggregate_key(a, props)
        cur = out.get(key)
        if cur is None:
            out[key] = Allocation(
                key,
                dict(a.props),
                a.window,
                a.start,
                a.end,
                dict(a.v),
                {k: dict(p) for k, p in a.pvs.items()},
            )
        else:
            cur.add(a)
    return StepSet(st.window, out)


def accumulate(sets: Iterable[StepSet]) -> StepSet:
    sets = list(sets)
    w = (sets[0].window[0], sets[-1].window[1])
    out: dict[str, Allocation] = {}
    for st in sets:
        for name, a in st.allocations.items():
            cur = out.get(name)
            if cur is None:
                cur = Allocation(
                    name, dict(a.props), w, a.start, a.end, dict(a.v), {k: dict(p) for k, p in a.pvs.items()}
                )
                out[name] = cur
            else:
                cur.add(a)
            cur.window = w
    return StepSet(w, out)


def set_json(st: StepSet) -> dict[str, Any]:
    return {name: st.allocations[name].to_json() for name in sorted(st.allocations)}
