"""The metrics OpenCost exports (``pkg/costmodel/metrics.go``), as a family of the twin's Prometheus:
queryable with PromQL next to cAdvisor's, on the same 15 s scrape grid.

- ``node_cpu_hourly_cost`` (per core), ``node_ram_hourly_cost`` (per GiB), ``node_gpu_hourly_cost``,
  ``node_total_hourly_cost``, ``kubecost_node_is_spot`` —
  ``{instance, node, instance_type, region, provider_id}``, while the node exists;
- ``pv_hourly_cost`` (per GiB-hour) — ``{volumename, persistentvolume, provider_id}``;
- ``container_cpu_allocation`` (cores) and ``container_memory_allocation_bytes`` —
  ``{namespace, pod, container, instance, node}``: ``max(request, usage)`` while the container runs;
- ``pod_pvc_allocation`` (bytes) — ``{namespace, pod, persistentvolumeclaim, persistentvolume}``.

Every series also carries ``job="opencost"``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...telemetry.seriesdb import SeriesDef, add_series
from ...telemetry.sources import MetricMetadata
from .costmodel import Container, CostModel

META = {
    "node_cpu_hourly_cost": MetricMetadata(
        "gauge", "node_cpu_hourly_cost hourly cost for each cpu on this node"
    ),
    "node_ram_hourly_cost": MetricMetadata(
        "gauge", "node_ram_hourly_cost hourly cost for each gb of ram on this node"
    ),
    "node_gpu_hourly_cost": MetricMetadata(
        "gauge", "node_gpu_hourly_cost hourly cost for each gpu on this node"
    ),
    "node_total_hourly_cost": MetricMetadata("gauge", "node_total_hourly_cost Total node cost per hour"),
    "kubecost_node_is_spot": MetricMetadata(
        "gauge", "kubecost_node_is_spot Cloud provider info about node preemptibility"
    ),
    "pv_hourly_cost": MetricMetadata("gauge", "pv_hourly_cost Cost per GB per hour on a persistent disk"),
    "container_cpu_allocation": MetricMetadata(
        "gauge", "container_cpu_allocation Percent of a single CPU used in a minute"
    ),
    "container_memory_allocation_bytes": MetricMetadata(
        "gauge", "container_memory_allocation_bytes Bytes of RAM used"
    ),
    "pod_pvc_allocation": MetricMetadata("gauge", "pod_pvc_allocation Bytes used by a PVC attached to a pod"),
}


def _alive(intervals: list[tuple[float, float]], value: float) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        ok = np.zeros(len(t), dtype=bool)
        for s, e in intervals:
            ok |= (t >= s) & (t < e)
        return np.where(ok, value, np.nan)

    return render


def _container_render(c: Container, which: int) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        return c.allocation_at(t)[which]

    return render


class OpenCostFamily:
    """A metric family (``telemetry/seriesdb.py``) over the cost model."""

    def __init__(self, model: CostModel) -> None:
        self.model = model
        self._token: object = None
        self._series: dict[str, list[SeriesDef]] = {}

    def metadata(self) -> dict[str, MetricMetadata]:
        return dict(META)

    def series(self, name: str) -> list[SeriesDef]:
        if name not in META:
            return []
        ctx = self.model._cadvisor().ctx
        tok = (ctx.history.token, ctx.health_token())
        if tok != self._token:
            self._series = self._build()
            self._token = tok
        return self._series.get(name, [])

    def _build(self) -> dict[str, list[SeriesDef]]:
        out: dict[str, list[SeriesDef]] = {}
        for n in self.model.nodes():
            if not n.intervals:
                continue
            start, end = n.intervals[0][0], n.intervals[-1][1]
            labels = {
                "instance": n.name,
                "node": n.name,
                "instance_type": n.instance_type,
                "region": n.region,
                "provider_id": n.provider_id,
                "job": "opencost",
            }
            for metric, value in (
                ("node_cpu_hourly_cost", n.rates.cpu),
                ("node_ram_hourly_cost", n.rates.ram_gib),
                ("node_gpu_hourly_cost", n.rates.gpu if n.gpus else 0.0),
                ("node_total_hourly_cost", n.hourly),
                ("kubecost_node_is_spot", 1.0 if n.rates.spot else 0.0),
            ):
                add_series(out, metric, labels, _alive(n.intervals, value), start, end)
        for d in self.model.disks():
            if not d.intervals:
                continue
            labels = {
                "volumename": d.name,
                "persistentvolume": d.name,
                "provider_id": d.provider_id,
                "job": "opencost",
            }
            add_series(
                out,
                "pv_hourly_cost",
                labels,
                _alive(d.intervals, d.hourly_per_gib),
                d.intervals[0][0],
                d.intervals[-1][1],
            )
        claims = {(d.claim_namespace, d.claim_name): d for d in self.model.disks() if d.claim_name}
        pods_done: set[tuple[str, str]] = set()
        for c in self.model.containers():
            start = float(c.starts.min()) if len(c.starts) else math.inf
            end = float(c.ends.max()) if len(c.ends) else math.inf
            labels = {
                "namespace": c.namespace,
                "pod": c.pod,
                "container": c.container,
                "instance": c.node,
                "node": c.node,
                "job": "opencost",
            }
            add_series(out, "container_cpu_allocation", labels, _container_render(c, 0), start, end)
            add_series(out, "container_memory_allocation_bytes", labels, _container_render(c, 1), start, end)
            if (c.namespace, c.pod) in pods_done:
                continue
            pods_done.add((c.namespace, c.pod))
            for claim in c.claims:
                disk = claims.get((c.namespace, claim))
                if disk is None:
                    continue
                plabels = {
                    "namespace": c.namespace,
                    "pod": c.pod,
                    "persistentvolumeclaim": claim,
                    "persistentvolume": disk.name,
                    "job": "opencost",
                }
                add_series(
                    out,
                    "pod_pvc_allocation",
                    plabels,
                    _alive(list(zip(c.starts, c.ends, strict=True)), disk.size_bytes),
                    start,
                    end,
                )
        return out
