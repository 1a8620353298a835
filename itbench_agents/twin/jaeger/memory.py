"""A :class:`TraceSource` over a fixed list of traces (tests, replays of recorded traces)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..telemetry.sources import Trace, TraceQuery
from .query import select_traces


class InMemoryTraceSource:
    def __init__(self, traces: Sequence[Trace]) -> None:
        self._traces = list(traces)
        self._by_id = {int(t.trace_id, 16): t for t in self._traces}

    def services(self) -> list[str]:
        return sorted({s.service for t in self._traces for s in t.spans})

    def operations(self, service: str, span_kind: str | None = None) -> list[tuple[str, str]]:
        ops = {
            (s.operation, s.span_kind)
            for t in self._traces
            for s in t.spans
            if s.service == service and (not span_kind or s.span_kind == span_kind)
        }
        return sorted(ops)

    def find_traces(self, query: TraceQuery) -> list[Trace]:
        return select_traces(self._traces, query)

    def get_trace(self, trace_id: str) -> Trace | None:
        try:
            return self._by_id.get(int(trace_id, 16))
        except ValueError:
            return None

    def dependencies(self, end_ms: int, lookback_ms: int) -> list[tuple[str, str, int]]:
        lo_us, hi_us = (end_ms - lookback_ms) * 1000, end_ms * 1000
        calls: Counter[tuple[str, str]] = Counter()
        for t in self._traces:
            by_id = {s.span_id: s for s in t.spans}
            for s in t.spans:
                parent = by_id.get(s.parent_span_id or "")
                if parent is not None and parent.service != s.service and lo_us <= s.start_us <= hi_us:
                    calls[(parent.service, s.service)] += 1
        return [(p, c, n) for (p, c), n in sorted(calls.items())]
