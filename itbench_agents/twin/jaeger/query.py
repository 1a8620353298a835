"""Jaeger trace-search semantics: which traces a :class:`TraceQuery` selects, and tag rendering.

A trace matches when one of its spans belongs to the service, has the operation (if given), lasts
within [minDuration, maxDuration], starts within [start, end] and carries every queried tag (among
its span tags, log fields or process tags; values compared as strings, as Jaeger's stores do).
"""

from __future__ import annotations

from ..telemetry.sources import Span, Trace, TraceQuery


def tag_string(v: str | int | float | bool) -> str:
    """Jaeger's ``KeyValue.AsString``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format(v, ".10g")
    return str(v)


def span_tags(span: Span) -> dict[str, str | int | float | bool]:
    """Span tags as Jaeger shows them: the span's own plus ``span.kind`` and ``error`` from OTLP."""
    tags: dict[str, str | int | float | bool] = dict(span.tags)
    if span.span_kind and "span.kind" not in tags:
        tags["span.kind"] = span.span_kind
    if span.error and "error" not in tags:
        tags["error"] = True
    return tags


def span_matches(span: Span, q: TraceQuery) -> bool:
    if span.service != q.service:
        return False
    if q.operation and span.operation != q.operation:
        return False
    if q.min_duration_us is not None and span.duration_us < q.min_duration_us:
        return False
    if q.max_duration_us is not None and span.duration_us > q.max_duration_us:
        return False
    if q.start_us and span.start_us < q.start_us:
        return False
    if q.end_us and span.start_us > q.end_us:
        return False
    if q.tags:
        tags = {k: tag_string(v) for k, v in span_tags(span).items()}
        for _, fields in span.logs:
            for k, v in fields.items():
                tags.setdefault(k, str(v))
        for k, v in span.process_tags.items():
            tags.setdefault(k, str(v))
        if any(tags.get(k) != v for k, v in q.tags.items()):
            return False
    return True


def trace_matches(trace: Trace, q: TraceQuery) -> bool:
    return any(span_matches(s, q) for s in trace.spans)


def trace_start(trace: Trace) -> int:
    return min((s.start_us for s in trace.spans), default=0)


def select_traces(traces: list[Trace], q: TraceQuery) -> list[Trace]:
    """Matching traces, most recent first, at most ``q.limit`` (all when the limit is 0)."""
    hits = sorted((t for t in traces if trace_matches(t, q)), key=lambda t: (-trace_start(t), t.trace_id))
    return hits[: q.limit] if q.limit > 0 else hits
