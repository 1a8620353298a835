"""The twin's :class:`~.sources.SeriesSource`: metric families rendered lazily at scrape times.

Every family lists its series as :class:`SeriesDef` (labels + existence interval + a vectorised
``render(times) -> values``). :meth:`MetricsSource.select` matches labels first and renders samples
only for the matching series, at the 15 s scrape grid (multiples of 15 s) inside the window and
before ``now``. A series that stops existing gets a Prometheus staleness marker (``STALE_NAN``) at
the first scrape after it is gone, then no samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .sources import STALE_NAN, Matcher, MetricMetadata, Series, match_all

SCRAPE_S = 15.0
Render = Callable[[np.ndarray], np.ndarray]


@dataclass
class SeriesDef:
    """One series: ``render(t)`` gives values at times ``t`` (s); NaN where the series is absent."""

    labels: dict[str, str]
    render: Render
    start: float = -math.inf
    end: float = math.inf

    def __post_init__(self) -> None:
        # Prometheus has no empty-valued labels: drop them once, here
        if "" in self.labels.values():
            self.labels = {k: v for k, v in self.labels.items() if v != ""}


def add_series(
    out: dict[str, list[SeriesDef]],
    metric: str,
    labels: dict[str, str],
    render: Render,
    start: float = -math.inf,
    end: float = math.inf,
) -> None:
    """Append the series ``{__name__=metric, **labels}`` to ``out[metric]``."""
    out.setdefault(metric, []).append(SeriesDef({"__name__": metric, **labels}, render, start, end))


class Family(Protocol):
    """A group of metrics with one producer (span metrics, kube-state-metrics, cAdvisor...)."""

    def metadata(self) -> dict[str, MetricMetadata]: ...

    def series(self, name: str) -> list[SeriesDef]:
        """All series of metric ``name`` known now (any time)."""
        ...


def scrape_grid(start_s: float, end_s: float) -> np.ndarray:
    """Scrape times (multiples of 15 s) in [start_s, end_s], plus the one before (for staleness)."""
    k0 = math.ceil(start_s / SCRAPE_S) - 1
    k1 = math.floor(end_s / SCRAPE_S)
    if k1 < k0:
        return np.zeros(0)
    return np.arange(k0, k1 + 1, dtype=np.float64) * SCRAPE_S


class MetricsSource:
    """SeriesSource over a set of families; ``now()`` bounds every answer."""

    def __init__(self, families: Sequence[Family], now: Callable[[], float]) -> None:
        self.families = list(families)
        self._now = now
        self._by_name: dict[str, Family] = {}
        self._meta: dict[str, MetricMetadata] = {}
        self._index()

    def _index(self) -> None:
        """(Re)index metric names: families may learn new names (app gauges) as health changes."""
        by_name: dict[str, Family] = {}
        meta: dict[str, MetricMetadata] = {}
        for fam in self.families:
            for name, m in fam.metadata().items():
                by_name[name] = fam
                meta[name] = m
        self._by_name, self._meta = by_name, meta

    # ------------------------------------------------------------------ SeriesSource
    def metadata(self) -> dict[str, MetricMetadata]:
        self._index()
        return dict(self._meta)

    def select(self, matchers: Sequence[Matcher], start_ms: int, end_ms: int) -> list[Series]:
        end_ms = min(int(end_ms), int(self._now() * 1000))
        if end_ms < start_ms:
            return []
        cands = self._candidates(matchers, start_ms / 1000.0, end_ms / 1000.0)
        return [s for s in self._rendered(cands, start_ms, end_ms) if s is not None]

    def select_windows(self, matchers: Sequence[Matcher], windows: Sequence[tuple[int, int]]) -> list[Series]:
        """:meth:`select` over several disjoint windows ``(start_ms, end_ms)``, ascending: each series
        once, in the order :meth:`select` over their whole span gives, holding exactly the samples
        that select gives inside the windows (the twin's samples are a function of their time:
        the PromQL engine fetches an instant selector's lookback windows at sparse steps so)."""
        now_ms = int(self._now() * 1000)
        spans = [(int(a), min(int(b), now_ms)) for a, b in windows]
        spans = [(a, b) for a, b in spans if a <= b]
        if not spans:
            return []
        cands = self._candidates(matchers, spans[0][0] / 1000.0, spans[-1][1] / 1000.0)
        grids = [g for g in (scrape_grid(a / 1000.0, b / 1000.0) for a, b in spans) if len(g) >= 2]
        if not grids or not cands:
            return []
        # one grid of every window's scrape times, each window's with the one before it: the
        # predecessor that says whether its first sample is a staleness marker, never returned
        grid = np.concatenate(grids)
        before = np.zeros(len(grid), dtype=bool)
        before[np.cumsum([0, *[len(g) for g in grids[:-1]]])] = True
        ts = (grid * 1000.0).astype(np.int64)
        out = []
        for sd in cands:
            lo, hi = self._bounds(sd, grid)
            if hi <= lo:
                continue
            g = grid[lo:hi]
            vals = np.where(
                (g >= sd.start) & (g < sd.end), np.asarray(sd.render(g), dtype=np.float64), np.nan
            )
            present = ~np.isnan(vals)
            stale = ~present
            stale[1:] &= present[:-1]
            stale[0] = False
            keep = (present | stale) & ~before[lo:hi]
            if keep.any():
                vals[stale] = STALE_NAN
                out.append(Series(dict(sd.labels), ts[lo:hi][keep], vals[keep]))
        return out

    def _rendered(self, cands: list[SeriesDef], start_ms: int, end_ms: int) -> list[Series | None]:
        """Each of ``cands`` over the window (None where it has no sample there)."""
        grid = scrape_grid(start_ms / 1000.0, end_ms / 1000.0)
        if len(grid) < 2:  # no scrape time inside the window (only the one before it)
            return [None] * len(cands)
        ts = (grid * 1000.0).astype(np.int64)
        # series with the same existence interval share the grid slice and the masks: render them
        # as one 2-D block (a histogram's buckets, a family built at one health change...)
        groups: dict[tuple[float, float], list[int]] = {}
        for i, sd in enumerate(cands):
            groups.setdefault((sd.start, sd.end), []).append(i)
        rendered: list[Series | None] = [None] * len(cands)
        for idx in groups.values():
            if len(idx) == 1:
                rendered[idx[0]] = self._render(cands[idx[0]], grid, ts)
            else:
                for i, series in zip(idx, self._render_block([cands[i] for i in idx], grid, ts), strict=True):
                    rendered[i] = series
        return rendered

    def label_names(self, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()) -> list[str]:
        names: set[str] = set()
        for sd in self._candidates(matchers, start_ms / 1000.0, min(end_ms / 1000.0, self._now())):
            names.update(k for k, v in sd.labels.items() if v)
        return sorted(names)

    def label_values(
        self, name: str, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()
    ) -> list[str]:
        vals: set[str] = set()
        for sd in self._candidates(matchers, start_ms / 1000.0, min(end_ms / 1000.0, self._now())):
            v = sd.labels.get(name)
            if v:
                vals.add(v)
        return sorted(vals)

    # ------------------------------------------------------------------ internals
    def _names(self, matchers: Sequence[Matcher]) -> list[str]:
        self._index()
        name_ms = [m for m in matchers if m.name == "__name__"]
        for m in name_ms:
            if m.op == "=":
                return (
                    [m.value]
                    if m.value in self._by_name and match_all(name_ms, {"__name__": m.value})
                    else []
                )
        return [n for n in self._by_name if match_all(name_ms, {"__name__": n})]

    def _candidates(self, matchers: Sequence[Matcher], start_s: float, end_s: float) -> list[SeriesDef]:
        others = [m for m in matchers if m.name != "__name__"]
        match = _memo_matcher(others)
        out = []
        for name in self._names(matchers):
            for sd in self._by_name[name].series(name):
                if sd.start > end_s or sd.end + SCRAPE_S < start_s:
                    continue
                if others and not match(sd.labels):
                    continue
                out.append(sd)
        return out

    @staticmethod
    def _bounds(sd: SeriesDef, grid: np.ndarray) -> tuple[int, int]:
        """The grid slice that can hold samples of ``sd``: from the scrape before it starts to the
        one after it ends (its staleness marker)."""
        n = len(grid)
        lo = 0 if sd.start <= grid[0] else max(int(np.searchsorted(grid, sd.start, side="left")) - 1, 0)
        hi = (
            n if sd.end + SCRAPE_S > grid[-1] else int(np.searchsorted(grid, sd.end + SCRAPE_S, side="right"))
        )
        return lo, hi

    def _render_block(self, sds: list[SeriesDef], grid: np.ndarray, ts: np.ndarray) -> list[Series | None]:
        """:meth:`_render` for series sharing ``start`` and ``end``, vectorised over the block:
        the same answers, one numpy pass instead of one per series."""
        n = len(grid)
        start, end = sds[0].start, sds[0].end
        lo, hi = self._bounds(sds[0], grid)
        if hi <= lo:
            return [None] * len(sds)
        g = grid[lo:hi] if lo or hi < n else grid
        vals = np.empty((len(sds), len(g)), dtype=np.float64)
        for i, sd in enumerate(sds):
            vals[i] = sd.render(g)
        if lo or hi < n or start > g[0] or end <= g[-1]:
            vals[:, ~((g >= start) & (g < end))] = np.nan
        present = ~np.isnan(vals)
        full = present.all(axis=1) if lo == 0 else np.zeros(len(sds), dtype=bool)
        stale = ~present
        stale[:, 1:] &= present[:, :-1]
        stale[:, 0] = False
        keep = present | stale
        if lo == 0:  # the extra point before the window is never returned
            keep[:, 0] = False
        vals[stale] = STALE_NAN
        tsg = ts[lo:hi]
        # most kept runs are contiguous (a series that starts, or ends, inside the window): slice
        m = keep.shape[1]
        count = keep.sum(axis=1)
        first = keep.argmax(axis=1)
        last = m - 1 - keep[:, ::-1].argmax(axis=1)
        contiguous = (count > 0) & (last - first + 1 == count)
        first[full], last[full] = 1, m - 1  # full rows: everything but the point before the window
        # rows kept over the same slice [a, b) get their samples from one copied block each:
        # every series owns its arrays (rows of a fresh block), no per-series copy
        rows: dict[tuple[int, int], list[int]] = {}
        for i, a, z in zip(
            np.flatnonzero(full | contiguous).tolist(),
            first[full | contiguous].tolist(),
            last[full | contiguous].tolist(),
            strict=True,
        ):
            rows.setdefault((a, z + 1), []).append(i)
        sliced: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for (a, b), idx in rows.items():
            vb = vals[idx, a:b]
            tb = np.repeat(tsg[None, a:b], len(idx), axis=0)
            for j, i in enumerate(idx):
                sliced[i] = (tb[j], vb[j])
        count_l = count.tolist()
        out: list[Series | None] = []
        for i, sd in enumerate(sds):
            got = sliced.get(i)
            if got is not None:
                out.append(Series(dict(sd.labels), got[0], got[1]))
            elif not count_l[i]:
                out.append(None)
            else:
                k = keep[i]
                out.append(Series(dict(sd.labels), tsg[k], vals[i][k]))
        return out

    def _render(self, sd: SeriesDef, grid: np.ndarray, ts: np.ndarray) -> Series | None:
        n = len(grid)
        lo, hi = self._bounds(sd, grid)
        if hi <= lo:
            return None
        g = grid[lo:hi] if lo or hi < n else grid
        vals = np.asarray(sd.render(g), dtype=np.float64)
        if lo or hi < n or sd.start > g[0] or sd.end <= g[-1]:
            vals = np.where((g >= sd.start) & (g < sd.end), vals, np.nan)
        present = ~np.isnan(vals)
        labels = dict(sd.labels)
        if lo == 0 and present.all():  # the common case: present throughout the window
            return Series(labels, ts[1:].copy(), vals[1:].copy())
        stale = ~present
        stale[1:] &= present[:-1]
        stale[0] = False
        keep = present | stale
        if lo == 0:  # the extra point before the window is never returned
            keep[0] = False
        if not keep.any():
            return None
        vals = vals.copy()
        vals[stale] = STALE_NAN
        return Series(labels, ts[lo:hi][keep], vals[keep])


def _memo_matcher(matchers: Sequence[Matcher]) -> Callable[[dict[str, str]], bool]:
    """``match_all(matchers, labels)``, remembering each matcher's verdict per label value (many
    series share a value, e.g. ``service_name``, so a regex runs once per value, not per series)."""
    memo: list[dict[str, bool]] = [{} for _ in matchers]
    pairs = list(zip(matchers, memo, strict=True))

    def match(labels: dict[str, str]) -> bool:
        for m, seen in pairs:
            v = labels.get(m.name, "")
            ok = seen.get(v)
            if ok is None:
                ok = seen[v] = m.matches({m.name: v})
            if not ok:
                return False
        return True

    return match
