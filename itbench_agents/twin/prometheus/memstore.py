"""An in-memory :class:`SeriesSource` over fixed samples (conformance ``load`` blocks, generated test data)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..telemetry.sources import Matcher, MetricMetadata, Series, SeriesSource, match_all
from .values import LabelKey, Labels, label_key


class MemorySeriesSource:
    """Series kept as sorted numpy arrays; ``add`` appends samples (re-sorted lazily)."""

    def __init__(self) -> None:
        self._series: dict[LabelKey, tuple[Labels, list[int], list[float]]] = {}
        self._arrays: dict[LabelKey, tuple[np.ndarray, np.ndarray]] = {}
        self._meta: dict[str, MetricMetadata] = {}

    def clear(self) -> None:
        self._series.clear()
        self._arrays.clear()

    def add(self, labels: Labels, timestamps_ms: Sequence[int], values: Sequence[float]) -> None:
        k = label_key(labels)
        entry = self._series.setdefault(k, (dict(labels), [], []))
        entry[1].extend(int(t) for t in timestamps_ms)
        entry[2].extend(float(v) for v in values)
        self._arrays.pop(k, None)

    def set_metadata(self, name: str, meta: MetricMetadata) -> None:
        self._meta[name] = meta

    def _arr(self, k: LabelKey) -> tuple[np.ndarray, np.ndarray]:
        a = self._arrays.get(k)
        if a is None:
            _, ts, vs = self._series[k]
            t = np.asarray(ts, dtype=np.int64)
            v = np.asarray(vs, dtype=np.float64)
            order = np.argsort(t, kind="stable")
            t, v = t[order], v[order]
            if len(t) > 1:  # a later load of the same timestamp wins
                keep = np.append(t[1:] != t[:-1], True)
                t, v = t[keep], v[keep]
            a = (t, v)
            self._arrays[k] = a
        return a

    def all_series(self) -> list[Series]:
        return [Series(dict(lb), *self._arr(k)) for k, (lb, _, _) in self._series.items()]

    # ------------------------------------------------------------------ SeriesSource
    def select(self, matchers: Sequence[Matcher], start_ms: int, end_ms: int) -> list[Series]:
        out = []
        for k, (lb, _, _) in self._series.items():
            if not match_all(matchers, lb):
                continue
            t, v = self._arr(k)
            lo = int(np.searchsorted(t, start_ms, side="left"))
            hi = int(np.searchsorted(t, end_ms, side="right"))
            if hi > lo:
                out.append(Series(dict(lb), t[lo:hi], v[lo:hi]))
        return out

    def _matching(self, start_ms: int, end_ms: int, matchers: Sequence[Matcher]) -> list[Labels]:
        return [s.labels for s in self.select(matchers, start_ms, end_ms)]

    def label_names(self, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()) -> list[str]:
        names: set[str] = set()
        for lb in self._matching(start_ms, end_ms, matchers):
            names.update(lb)
        return sorted(names)

    def label_values(
        self, name: str, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()
    ) -> list[str]:
        return sorted({lb[name] for lb in self._matching(start_ms, end_ms, matchers) if name in lb})

    def metadata(self) -> dict[str, MetricMetadata]:
        return dict(self._meta)


class CompositeSource:
    """Several series sources seen as one (the twin's metrics plus the ``ALERTS`` series)."""

    def __init__(self, *sources: SeriesSource) -> None:
        self.sources = sources

    def select(self, matchers: Sequence[Matcher], start_ms: int, end_ms: int) -> list[Series]:
        return [s for src in self.sources for s in src.select(matchers, start_ms, end_ms)]

    def label_names(self, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()) -> list[str]:
        return sorted({n for src in self.sources for n in src.label_names(start_ms, end_ms, matchers)})

    def label_values(
        self, name: str, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()
    ) -> list[str]:
        return sorted({v for src in self.sources for v in src.label_values(name, start_ms, end_ms, matchers)})

    def metadata(self) -> dict[str, MetricMetadata]:
        out: dict[str, MetricMetadata] = {}
        for src in self.sources:
            out.update(src.metadata())
        return out


class LockedSource:
    """A source read under ``lock`` one short call at a time, so a heavy query never holds the
    twin's lock for long: a selector without a ``__name__=`` matcher on the twin's
    :class:`~..telemetry.seriesdb.MetricsSource` is read one metric name after the other (in the
    source's own name order, so the series come back in the same order as one big select), with
    the query budget checked in between."""

    def __init__(self, base: SeriesSource, lock: Any) -> None:
        self.base = base
        self.lock = lock

    def _names(self, matchers: Sequence[Matcher]) -> list[str] | None:
        from ..telemetry.seriesdb import MetricsSource

        if not isinstance(self.base, MetricsSource):
            return None
        name_ms = [m for m in matchers if m.name == "__name__"]
        if any(m.op == "=" for m in name_ms):
            return None
        with self.lock:
            names = list(self.base.metadata())
        return [n for n in names if match_all(name_ms, {"__name__": n})]

    def select(self, matchers: Sequence[Matcher], start_ms: int, end_ms: int) -> list[Series]:
        from .limits import checkpoint, holding

        names = self._names(matchers)
        if names is None:
            with holding(self.lock):
                return self.base.select(matchers, start_ms, end_ms)
        others = [m for m in matchers if m.name != "__name__"]
        out: list[Series] = []
        for n in names:
            checkpoint()
            with holding(self.lock):
                out.extend(self.base.select([Matcher("__name__", "=", n), *others], start_ms, end_ms))
        return out

    def label_names(self, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()) -> list[str]:
        with self.lock:
            return self.base.label_names(start_ms, end_ms, matchers)

    def label_values(
        self, name: str, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()
    ) -> list[str]:
        with self.lock:
            return self.base.label_values(name, start_ms, end_ms, matchers)

    def metadata(self) -> dict[str, MetricMetadata]:
        with self.lock:
            return self.base.metadata()
