"""cAdvisor (kubelet ``/metrics/cadvisor``) and node-exporter series.

Per container *instance* (see :mod:`.history`): CPU seconds (a counter that restarts with the
container), working set, limits, CFS periods / throttled periods, OOM events. Usage comes from the
health timeline (``ServiceHealth.cpu_cores_per_pod`` / ``memory_bytes_per_pod``: *demand*) for a
pod's main container, capped at its limits; other containers, or services without usage in
health, ask the container runtime once per instance. Node series sum their pods' usage at each
health snapshot.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...k8s.kinds import GroupResource
from ...k8s.quantity import parse_quantity
from .context import TelemetryContext
from .history import Instance, ObjRecord
from .noise import key64, ms_since, normal, uniform
from .profile import Profile
from .seriesdb import SeriesDef, add_series
from .sources import MetricMetadata

Obj = dict[str, Any]
PODS = GroupResource("", "pods")
NODES = GroupResource("", "nodes")
CFS_PERIODS_PER_S = 10.0  # 100 ms CFS period

CADVISOR_META = {
    "container_cpu_usage_seconds_total": MetricMetadata(
        "counter", "Cumulative cpu time consumed in seconds."
    ),
    "container_memory_working_set_bytes": MetricMetadata("gauge", "Current working set in bytes."),
    "container_memory_rss": MetricMetadata("gauge", "Size of RSS in bytes."),
    "container_spec_memory_limit_bytes": MetricMetadata("gauge", "Memory limit for the container."),
    "container_spec_cpu_quota": MetricMetadata("gauge", "CPU quota of the container."),
    "container_spec_cpu_period": MetricMetadata("gauge", "CPU period of the container."),
    "container_cpu_cfs_periods_total": MetricMetadata(
        "counter", "Number of elapsed enforcement period intervals."
    ),
    "container_cpu_cfs_throttled_periods_total": MetricMetadata(
        "counter", "Number of throttled period intervals."
    ),
    "container_oom_events_total": MetricMetadata(
        "counter", "Count of out of memory events observed for the container"
    ),
    "container_start_time_seconds": MetricMetadata(
        "gauge", "Start time of the container since unix epoch in seconds."
    ),
}
NODE_META = {
    "node_cpu_seconds_total": MetricMetadata("counter", "Seconds the CPUs spent in each mode."),
    "node_memory_MemTotal_bytes": MetricMetadata("gauge", "Memory information field MemTotal_bytes."),
    "node_memory_MemAvailable_bytes": MetricMetadata("gauge", "Memory information field MemAvailable_bytes."),
}


def throttle_fraction(demand: np.ndarray, limit: float) -> np.ndarray:
    """Share of CFS periods throttled when a container wants ``demand`` cores under ``limit``."""
    if limit <= 0:
        return np.zeros_like(demand)
    return np.clip((demand / limit - 0.8) / 0.4, 0.0, 1.0)  # type: ignore[no-any-return]


class _ContainerModel:
    """Usage of one container across its instances."""

    def __init__(
        self, ctx: TelemetryContext, pod: Obj, spec: Obj, service: str, main: bool, insts: list[Instance]
    ) -> None:
        self.insts = insts
        self.epoch = ctx.epoch
        self.starts = np.asarray([i.start for i in insts])
        self.ends = np.asarray([i.end for i in insts])
        res = spec.get("resources") or {}
        self.cpu_limit = parse_quantity((res.get("limits") or {}).get("cpu"))
        self.mem_limit = parse_quantity((res.get("limits") or {}).get("memory"))
        profs = ctx.usage_profiles(service) if main else None
        hot: Profile | None = None
        if profs is not None:
            cpu, mem, hot = profs
            self.cpu_demand = cpu
        else:
            runtime = getattr(ctx.twin, "runtime", None)
            c, m = 0.01, 32.0 * 2**20
            if runtime is not None and insts:
                try:
                    u = runtime.usage(pod, spec, insts[-1].start)
                    c, m = float(u.cpu_cores), float(u.memory_bytes)
                except Exception:  # a runtime that cannot answer for this container: defaults
                    pass
            t0 = insts[0].start if insts else 0.0
            self.cpu_demand = Profile.build([t0], [c])
            mem = Profile.build([t0], [m])
        cap = self.cpu_limit if self.cpu_limit > 0 else math.inf
        self.cpu_used = Profile(self.cpu_demand.times, np.minimum(self.cpu_demand.values, cap))
        self.mem = mem
        frac = throttle_fraction(self.cpu_demand.values, self.cpu_limit)
        if hot is not None and self.cpu_limit > 0:
            frac = np.maximum(frac, 0.9 * hot.values)
        self.throttle = Profile(self.cpu_demand.times, frac)

    def which(self, t: np.ndarray) -> np.ndarray:
        """Index of the instance running at each t (-1 when none)."""
        i = np.searchsorted(self.starts, t, side="right") - 1
        ok = i >= 0
        ok[ok] &= t[ok] < self.ends[i[ok]]
        return np.where(ok, i, -1)  # type: ignore[no-any-return]

    def since_start(self, prof: Profile, t: np.ndarray, key: int) -> np.ndarray:
        i = self.which(t)
        out = np.full(len(t), np.nan)
        run = i >= 0
        if run.any():
            st = self.starts[i[run]]
            tr = t[run]
            jit = (2 * uniform(key, ms_since(tr, self.epoch)) - 1) * 3.0
            tw = np.maximum(tr + jit, st)
            out[run] = np.maximum(prof.integral(tw) - prof.integral(st), 0.0)
        return out


ContainerModels = list[tuple[dict[str, str], _ContainerModel]]
"""A pod's containers that ran: (series labels, usage model), as :meth:`CadvisorFamily.containers` gives."""


class CadvisorFamily:
    def __init__(self, ctx: TelemetryContext) -> None:
        self.ctx = ctx
        self._token: object = None
        self._series: dict[str, list[SeriesDef]] = {}
        self._pod_cache: dict[
            tuple[str, str], tuple[object, dict[str, list[SeriesDef]], ContainerModels]
        ] = {}

    def metadata(self) -> dict[str, MetricMetadata]:
        return {**CADVISOR_META, **NODE_META}

    def series(self, name: str) -> list[SeriesDef]:
        tok = (self.ctx.history.token, self.ctx.health_token())
        if tok != self._token:
            merged: dict[str, list[SeriesDef]] = {}
            models: ContainerModels = []
            for rec in self.ctx.history.of(PODS):
                key = (rec.namespace, rec.name)
                sub = (len(rec.objs), self.ctx.health_token())
                cached = self._pod_cache.get(key)
                if cached is None or cached[0] != sub:
                    pod_models = self.containers(rec)
                    cached = (sub, self._pod_series(rec, pod_models), pod_models)
                    self._pod_cache[key] = cached
                for metric, defs in cached[1].items():
                    merged.setdefault(metric, []).extend(defs)
                models.extend(cached[2])
            for metric, defs in self._node_series(models).items():
                merged.setdefault(metric, []).extend(defs)
            self._series = merged
            self._token = tok
        return self._series.get(name, [])

    # ------------------------------------------------------------------ containers
    def containers(self, rec: ObjRecord) -> ContainerModels:
        last = rec.latest
        if last is None:
            return []
        insts = self.ctx.instances(rec)
        spec = last.get("spec") or {}
        containers = spec.get("containers") or []
        service = self.ctx.service_of(last)
        names = [c.get("name") for c in containers]
        main_name = self.ctx.main_container(service, names)
        out = []
        for c in containers:
            cname = c.get("name", "")
            ci = [i for i in insts.get(cname, []) if not i.init]
            if not ci:
                continue
            labels = {
                "namespace": rec.namespace,
                "pod": rec.name,
                "container": cname,
                "node": spec.get("nodeName", "") or "",
                "image": c.get("image", ""),
                "job": "kubelet",
                "metrics_path": "/metrics/cadvisor",
            }
            out.append((labels, _ContainerModel(self.ctx, last, c, service, cname == main_name, ci)))
        return out

    def _pod_series(self, rec: ObjRecord, models: ContainerModels) -> dict[str, list[SeriesDef]]:
        out: dict[str, list[SeriesDef]] = {}
        seed = self.ctx.seed

        for labels, cm in models:
            start, end = float(cm.starts.min()), float(cm.ends.max())
            k = key64(seed, "cadvisor", rec.namespace, rec.name, labels["container"])
            add_series(out, "container_cpu_usage_seconds_total", labels, _cpu_render(cm, k), start, end)
            add_series(out, "container_memory_working_set_bytes", labels, _mem_render(cm, k, 1.0), start, end)
            add_series(out, "container_memory_rss", labels, _mem_render(cm, k, 0.85), start, end)
            add_series(
                out, "container_spec_memory_limit_bytes", labels, _const_render(cm, cm.mem_limit), start, end
            )
            add_series(out, "container_start_time_seconds", labels, _start_render(cm), start, end)
            add_series(out, "container_oom_events_total", labels, _oom_render(cm), start, end)
            if cm.cpu_limit > 0:
                add_series(
                    out,
                    "container_spec_cpu_quota",
                    labels,
                    _const_render(cm, cm.cpu_limit * 100000),
                    start,
                    end,
                )
                add_series(out, "container_spec_cpu_period", labels, _const_render(cm, 100000.0), start, end)
                add_series(out, "container_cpu_cfs_periods_total", labels, _periods_render(cm), start, end)
                add_series(
                    out,
                    "container_cpu_cfs_throttled_periods_total",
                    labels,
                    _throttled_render(cm, k),
                    start,
                    end,
                )
        return out

    # ------------------------------------------------------------------ nodes
    def _node_series(self, models: ContainerModels) -> dict[str, list[SeriesDef]]:
        """Node series from the container models of every pod (``models``, as cached with the pods)."""
        snaps_t = self.ctx.snapshot_times()
        out: dict[str, list[SeriesDef]] = {}
        for rec in self.ctx.history.of(NODES):
            last = rec.latest
            if last is None:
                continue
            node = rec.name
            cap = (last.get("status") or {}).get("capacity") or {}
            cores = max(int(parse_quantity(cap.get("cpu", "4"))), 1)
            mem_total = parse_quantity(cap.get("memory", "16Gi"))
            mine = [cm for lbl, cm in models if lbl["node"] == node]
            times = sorted(
                {
                    rec.first,
                    *snaps_t,
                    *(s for cm in mine for s in cm.starts),
                    *(e for cm in mine for e in cm.ends if math.isfinite(e)),
                }
            )
            ta = np.asarray(times)
            busy = np.full(len(ta), 0.05 * cores)
            used_mem = np.full(len(ta), 0.1 * mem_total)
            for cm in mine:
                run = cm.which(ta) >= 0
                busy += np.where(run, np.nan_to_num(cm.cpu_used.at(ta)), 0.0)
                used_mem += np.where(run, np.nan_to_num(cm.mem.at(ta)), 0.0)
            busy = np.minimum(busy, cores * 0.98)
            per_cpu = busy / cores
            start, end = rec.first, rec.last
            base = {"instance": node, "node": node, "job": "node-exporter"}
            k = key64(self.ctx.seed, "node", node)
            for cpu in range(cores):
                for mode, share in (("user", 0.7), ("system", 0.25), ("iowait", 0.05), ("idle", None)):
                    vals = (1.0 - per_cpu) if share is None else per_cpu * share
                    prof = Profile(ta, vals)
                    add_l = {**base, "cpu": str(cpu), "mode": mode}
                    add_series(
                        out,
                        "node_cpu_seconds_total",
                        add_l,
                        _node_cpu_render(prof, k + cpu, self.ctx.epoch),
                        start,
                        end,
                    )
            add_series(out, "node_memory_MemTotal_bytes", base, _const(mem_total), start, end)
            avail = Profile(ta, np.maximum(mem_total - used_mem, 0.0))
            add_series(
                out,
                "node_memory_MemAvailable_bytes",
                base,
                _gauge_render(avail, k, 0.005, self.ctx.epoch),
                start,
                end,
            )
        return out


def _cpu_render(cm: _ContainerModel, key: int) -> Any:
    return lambda t: np.round(cm.since_start(cm.cpu_used, t, key), 6)


def _mem_render(cm: _ContainerModel, key: int, scale: float) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        run = cm.which(t) >= 0
        v = cm.mem.at(t) * scale * (1.0 + 0.01 * normal(key, ms_since(t, cm.epoch)))
        if cm.mem_limit > 0:
            v = np.minimum(v, cm.mem_limit)
        return np.where(run, np.round(np.nan_to_num(v)), np.nan)  # type: ignore[no-any-return]

    return render


def _const_render(cm: _ContainerModel, value: float) -> Any:
    return lambda t: np.where(cm.which(t) >= 0, value, np.nan)


def _start_render(cm: _ContainerModel) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        i = cm.which(t)
        return np.where(i >= 0, np.floor(cm.starts[np.clip(i, 0, None)]), np.nan)  # type: ignore[no-any-return]

    return render


def _oom_render(cm: _ContainerModel) -> Any:
    oom_ends = np.sort(np.asarray([i.end for i in cm.insts if i.reason == "OOMKilled"]))

    def render(t: np.ndarray) -> np.ndarray:
        n = np.searchsorted(oom_ends, t, side="right").astype(np.float64)
        return np.where(cm.which(t) >= 0, n, np.nan)  # type: ignore[no-any-return]

    return render


def _periods_render(cm: _ContainerModel) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        i = cm.which(t)
        el = t - cm.starts[np.clip(i, 0, None)]
        return np.where(i >= 0, np.floor(el * CFS_PERIODS_PER_S), np.nan)  # type: ignore[no-any-return]

    return render


def _throttled_render(cm: _ContainerModel, key: int) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        v = cm.since_start(cm.throttle, t, key ^ 0x7777)
        return np.floor(v * CFS_PERIODS_PER_S)  # type: ignore[no-any-return]

    return render


def _node_cpu_render(prof: Profile, key: int, epoch: float) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        jit = (2 * uniform(key, ms_since(t, epoch)) - 1) * 3.0
        tw = np.maximum(t + jit, prof.start)
        return np.round(prof.integral(tw), 2)  # type: ignore[no-any-return]

    return render


def _gauge_render(prof: Profile, key: int, rel: float, epoch: float) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        return np.round(prof.at(t) * (1.0 + rel * normal(key, ms_since(t, epoch))))  # type: ignore[no-any-return]

    return render


def _const(value: float) -> Any:
    return lambda t: np.full(len(t), value)
