"""Inner results of subqueries, kept between evaluations of the same rules on a forward-moving clock.

OpenCost's cost alerts compare the last hour's spend with ``avg_over_time((...)[7d:1h] offset 1h)``:
evaluated every minute, each evaluation would recompute the inner expression at 168 hourly grid
points of which 167 it computed the minute before. The alert engine (``alerts.py``) hands its
:class:`~.engine.Engine` one :class:`SubqueryCache`; the evaluator then computes the inner expression
only at grid timestamps it has not seen, and remembers those that are **final**: at or before
:attr:`SubqueryCache.final_ms`, which the alert engine sets a minute behind the twin's clock (the
twin's samples are a pure function of a past that only grows, and a counter's scrape jitter is
±5 s). Inner expressions with ``@`` are never cached (``@ start()``/``end()`` depend on the query).

Queries from agents never use it: their limits, warnings and errors stay exactly Prometheus'.
``tests/twin/test_subquery_cache.py`` checks that cached and uncached alert engines agree at every
evaluation of a FinOps episode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .values import LabelKey, Labels, RSeries, label_key

MAX_POINTS = 200_000
"""Grid points kept over all inner expressions; beyond it the cache starts over."""
UNUSED_MS = 86_400_000
"""An inner expression no query asked for in a day of the clock is forgotten (a rule removed)."""


@dataclass
class SubqueryCache:
    final_ms: int = -(2**62)
    """Grid timestamps at or before this are final (their inner results are kept)."""
    hits: int = 0
    misses: int = 0
    _points: dict[str, dict[int, list[tuple[Labels, float]]]] = field(default_factory=dict)
    _oldest_used: dict[str, int] = field(default_factory=dict)
    _last_used: dict[str, int] = field(default_factory=dict)

    def new_round(self, final_ms: int) -> None:
        """Start an evaluation round (one ``evaluate_until``): of each inner expression the last
        round used, the points older than any grid it asked for are dropped (rounds only move
        forward); expressions unused for :data:`UNUSED_MS` are dropped; then ``final_ms`` moves on."""
        for key, oldest in self._oldest_used.items():
            pts = self._points.get(key)
            if pts:
                for t in [t for t in pts if t < oldest]:
                    del pts[t]
            self._last_used[key] = self.final_ms
        self._oldest_used.clear()
        for key in [k for k, t in self._last_used.items() if t < final_ms - UNUSED_MS]:
            del self._last_used[key]
            self._points.pop(key, None)
        if sum(len(p) for p in self._points.values()) > MAX_POINTS:
            self._points.clear()
        self.final_ms = max(self.final_ms, final_ms)

    @staticmethod
    def applies(text: str) -> bool:
        return "@" not in text

    def series(
        self, text: str, grid: np.ndarray, compute: Callable[[np.ndarray], list[RSeries]]
    ) -> list[RSeries]:
        """The inner expression ``text`` over ``grid`` as ``compute(grid)`` gives it (one
        :class:`RSeries` per label set, samples at the grid timestamps where it is present),
        calling ``compute`` only for the timestamps not kept."""
        if len(grid) == 0:
            return compute(grid)
        points = self._points.setdefault(text, {})
        first = int(grid[0])
        self._oldest_used[text] = min(self._oldest_used.get(text, first), first)
        times = grid.tolist()
        missing = [t for t in times if t not in points]
        self.hits += len(times) - len(missing)
        self.misses += len(missing)
        fresh: dict[int, list[tuple[Labels, float]]] = {t: [] for t in missing}
        if missing:
            for s in compute(np.asarray(missing, dtype=np.int64)):
                for t, v in zip(s.ts.tolist(), s.vals.tolist(), strict=True):
                    fresh[int(t)].append((s.labels, float(v)))
            for t, rows in fresh.items():
                if t <= self.final_ms:
                    points[t] = rows
        return _assemble(times, points, fresh)


def _assemble(
    times: list[int],
    points: dict[int, list[tuple[Labels, float]]],
    fresh: dict[int, list[tuple[Labels, float]]],
) -> list[RSeries]:
    by_key: dict[LabelKey, tuple[Labels, list[int], list[float]]] = {}
    for t in times:
        rows = fresh.get(t)
        if rows is None:
            rows = points[t]
        for labels, v in rows:
            k = label_key(labels)
            entry = by_key.get(k)
            if entry is None:
                entry = by_key[k] = (labels, [], [])
            entry[1].append(t)
            entry[2].append(v)
    return [
        RSeries(labels, np.asarray(ts, dtype=np.int64), np.asarray(vs, dtype=np.float64))
        for labels, ts, vs in by_key.values()
    ]


def inner_text(node: Any) -> str:
    """The canonical text of a subquery's inner expression (the cache key)."""
    return str(node)
