"""OpenCost assets over a window: one ``Node`` per node and one ``Disk`` per persistent volume, keyed
as OpenCost keys an asset set (``provider/account/project/category/cluster/type/service/providerID/name``,
``__undefined__`` for what a cluster without a cloud bill does not know), with the fields of
``core/pkg/opencost/asset_json.go``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .allocation import _num, rfc3339
from .costmodel import CLUSTER, GIB, CostModel, DiskAsset, NodeAsset
from .filters import ASSET_FIELDS, parse_filter

UNDEFINED = "__undefined__"


def _props(category: str, name: str, provider_id: str) -> dict[str, str]:
    return {
        "category": category,
        "provider": "custom",
        "service": "Kubernetes",
        "cluster": CLUSTER,
        "name": name,
        "providerID": provider_id,
    }


def _key(category: str, kind: str, name: str, provider_id: str) -> str:
    return "/".join(
        (UNDEFINED, UNDEFINED, UNDEFINED, category, CLUSTER, kind, "Kubernetes", provider_id, name)
    )


def node_json(n: NodeAsset, window: tuple[float, float], now: float) -> dict[str, Any] | None:
    edges = np.asarray(window)
    secs = float(n.seconds(edges, now)[0])
    if secs <= 0:
        return None
    start = max(window[0], min(s for s, _ in n.intervals))
    end = min(window[1], now, max(e for _, e in n.intervals))
    hours = secs / 3600.0
    mins = max(end - start, 0.0) / 60.0
    cpu_cost = n.cores * n.rates.cpu * hours
    ram_cost = n.ram_bytes / GIB * n.rates.ram_gib * hours
    gpu_cost = n.gpus * n.rates.gpu * hours
    return {
        "type": "Node",
        "properties": _props("Compute", n.name, n.provider_id),
        "labels": dict(n.labels),
        "window": {"start": rfc3339(window[0]), "end": rfc3339(window[1])},
        "start": rfc3339(start),
        "end": rfc3339(end),
        "minutes": _num(mins),
        "nodeType": n.instance_type,
        "cpuCores": _num(n.cores * hours / (mins / 60.0) if mins > 0 else 0.0),
        "ramBytes": _num(n.ram_bytes * hours / (mins / 60.0) if mins > 0 else 0.0),
        "cpuCoreHours": _num(n.cores * hours),
        "ramByteHours": _num(n.ram_bytes * hours),
        "GPUHours": _num(n.gpus * hours),
        "cpuBreakdown": {"idle": 0.0, "other": 0.0, "system": 0.0, "user": 0.0},
        "ramBreakdown": {"idle": 0.0, "other": 0.0, "system": 0.0, "user": 0.0},
        "preemptible": 1.0 if n.rates.spot else 0.0,
        "discount": 0.0,
        "cpuCost": _num(cpu_cost),
        "gpuCost": _num(gpu_cost),
        "gpuCount": _num(n.gpus),
        "ramCost": _num(ram_cost),
        "adjustment": 0.0,
        "totalCost": _num(cpu_cost + ram_cost + gpu_cost),
    }


def disk_json(d: DiskAsset, window: tuple[float, float], now: float) -> dict[str, Any] | None:
    secs = float(d.seconds(np.asarray(window), now)[0])
    if secs <= 0:
        return None
    start = max(window[0], min(s for s, _ in d.intervals))
    end = min(window[1], now, max(e for _, e in d.intervals))
    byte_hours = d.size_bytes * secs / 3600.0
    cost = byte_hours / GIB * d.hourly_per_gib
    return {
        "type": "Disk",
        "properties": _props("Storage", d.name, d.provider_id),
        "labels": {},
        "window": {"start": rfc3339(window[0]), "end": rfc3339(window[1])},
        "start": rfc3339(start),
        "end": rfc3339(end),
        "minutes": _num(max(end - start, 0.0) / 60.0),
        "byteHours": _num(byte_hours),
        "bytes": _num(d.size_bytes),
        "byteHoursUsed": None,
        "byteUsageMax": None,
        "breakdown": {"idle": 0.0, "other": 0.0, "system": 0.0, "user": 0.0},
        "adjustment": 0.0,
        "totalCost": _num(cost),
        "storageClass": d.storage_class,
        "volumeName": d.name,
        "claimName": d.claim_name,
        "claimNamespace": d.claim_namespace,
    }


def asset_set(model: CostModel, window: tuple[float, float], filter_text: str = "") -> dict[str, Any]:
    keep = parse_filter(filter_text, ASSET_FIELDS)
    now = model.now()
    out: dict[str, Any] = {}
    for n in model.nodes():
        j = node_json(n, window, now)
        if j is not None and keep(_getter(j, "node")):
            out[_key("Compute", "Node", n.name, n.provider_id)] = j
    for d in model.disks():
        j = disk_json(d, window, now)
        if j is not None and keep(_getter(j, "disk")):
            out[_key("Storage", "Disk", d.name, d.provider_id)] = j
    return dict(sorted(out.items()))


def _getter(asset: dict[str, Any], asset_type: str) -> Any:
    props = asset["properties"]

    def get(field: str, key: str) -> Any:
        if field in ("assetType", "type"):
            return asset_type
        if field == "label":
            return (asset.get("labels") or {}).get(key)
        return props.get(field, "")

    return get
