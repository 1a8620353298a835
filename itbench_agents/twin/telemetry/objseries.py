"""Series that follow objects' versions (kube-state-metrics style).

A sample function turns one object version into samples ``(metric, labels, value)``. For each
object, the union of its versions' samples makes its series; the value at a scrape time is the
one of the version in force then, absent (NaN) while a version does not report that series and
after the object is deleted. Results are cached per object and only recomputed when the object
gets new versions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ...k8s.kinds import GroupResource
from .context import TelemetryContext
from .history import ObjRecord
from .seriesdb import SeriesDef, add_series
from .sources import MetricMetadata

Obj = dict[str, Any]
Sample = tuple[str, dict[str, str], float]
SampleFn = Callable[[Obj], Iterable[Sample]]


class _VersionIndex:
    """Which version of an object is in force at each scrape time; shared by all its series and
    remembered for the last grid (one query renders many series of the same object)."""

    def __init__(self, times: np.ndarray) -> None:
        self.times = times
        self._memo: tuple[tuple[float, float, int], np.ndarray, np.ndarray] | None = None

    def lookup(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = (float(t[0]), float(t[-1]), len(t)) if len(t) else (0.0, 0.0, 0)
        memo = self._memo  # one attribute, swapped whole: safe across query threads
        if memo is None or memo[0] != key:
            i = np.searchsorted(self.times, t, side="right") - 1
            memo = (key, np.maximum(i, 0), i < 0)
            self._memo = memo
        return memo[1], memo[2]


def _version_render(index: _VersionIndex, per_version: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    def render(t: np.ndarray) -> np.ndarray:
        idx, before = index.lookup(t)
        out = per_version[idx]
        if before.any():
            out[before] = np.nan
        return out  # type: ignore[no-any-return]

    return render


def object_series(rec: ObjRecord, fn: SampleFn, extra: dict[str, str]) -> dict[str, list[SeriesDef]]:
    n = len(rec.objs)
    table: dict[tuple[str, tuple[tuple[str, str], ...]], np.ndarray] = {}
    for i, obj in enumerate(rec.objs):
        if obj is None:
            continue
        for metric, labels, value in fn(obj):
            key = (metric, tuple(sorted(labels.items())))
            arr = table.get(key)
            if arr is None:
                arr = table[key] = np.full(n, np.nan)
            arr[i] = value
    times = rec.times_array()
    index = _VersionIndex(times)
    out: dict[str, list[SeriesDef]] = {}
    for (metric, lbls), arr in table.items():
        present = np.nonzero(~np.isnan(arr))[0]
        start = float(times[present[0]])
        after = present[-1] + 1
        end = float(times[after]) if after < n else math.inf
        add_series(out, metric, {**dict(lbls), **extra}, _version_render(index, arr), start, end)
    return out


class ObjectFamily:
    """All metrics derived from one resource type."""

    def __init__(
        self,
        ctx: TelemetryContext,
        gr: GroupResource,
        fn: SampleFn,
        meta: dict[str, MetricMetadata],
        extra: dict[str, str] | None = None,
    ) -> None:
        self.ctx, self.gr, self.fn, self.meta = ctx, gr, fn, meta
        self.extra = extra or {}
        self._cache: dict[tuple[str, str], tuple[int, dict[str, list[SeriesDef]]]] = {}
        self._token = -1
        self._series: dict[str, list[SeriesDef]] = {}

    def metadata(self) -> dict[str, MetricMetadata]:
        return dict(self.meta)

    def series(self, name: str) -> list[SeriesDef]:
        tok = self.ctx.history.token
        if tok != self._token:
            merged: dict[str, list[SeriesDef]] = {}
            for rec in self.ctx.history.of(self.gr):
                key = (rec.namespace, rec.name)
                cached = self._cache.get(key)
                if cached is None or cached[0] != len(rec.objs):
                    cached = (len(rec.objs), object_series(rec, self.fn, self.extra))
                    self._cache[key] = cached
                for metric, defs in cached[1].items():
                    merged.setdefault(metric, []).extend(defs)
            self._series = merged
            self._token = tok
        return self._series.get(name, [])
