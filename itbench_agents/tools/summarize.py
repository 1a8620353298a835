"""Deterministic digests of long tool results, applied before any LLM summary.

- metric series → one line per series: min / max / last / trend;
- log lines → grouped by template (numbers, ids and quoted values masked), with counts;
- traces → error trees: only the spans on paths that end in an error.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

MAX_SERIES = 40
MAX_TEMPLATES = 25


def _labels(metric: dict[str, str]) -> str:
    name = metric.get("__name__", "")
    rest = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{rest}}}" if rest or not name else name


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.4g}"


def trend(values: list[float]) -> str:
    vals = [v for v in values if not math.isnan(v)]
    if len(vals) < 2:
        return "flat"
    first, last = vals[0], vals[-1]
    span = max(max(vals) - min(vals), 1e-12)
    if abs(last - first) < 0.1 * span:
        # same start and end: was there a spike or dip in between?
        return "spiky" if span > 0.5 * max(abs(first), abs(last), 1e-12) else "flat"
    return "rising" if last > first else "falling"


def digest_vector(result: list[dict[str, Any]]) -> str:
    """One line per series, largest value first (NaN last)."""
    if not result:
        return "(empty result: no series matched)"
    valued = [(_num(r.get("value", [0, "nan"])[1]), r) for r in result]
    valued.sort(key=lambda vr: (math.isnan(vr[0]), -vr[0] if not math.isnan(vr[0]) else 0.0))
    lines = [f"{_labels(r.get('metric', {}))} {_fmt(v)}" for v, r in valued[:MAX_SERIES]]
    if len(valued) > MAX_SERIES:
        lines.append(f"... and {len(valued) - MAX_SERIES} more series")
    return f"{len(valued)} series:\n" + "\n".join(lines)


def digest_matrix(result: list[dict[str, Any]]) -> str:
    if not result:
        return "(empty result: no series matched)"
    rows: list[tuple[float, str]] = []
    for r in result:
        vals = [_num(v[1]) for v in r.get("values", [])]
        finite = [v for v in vals if not math.isnan(v)]
        if not finite:
            rows.append((-math.inf, f"{_labels(r.get('metric', {}))}: no samples"))
            continue
        last = finite[-1]
        rows.append(
            (
                max(finite),
                f"{_labels(r.get('metric', {}))}: n={len(vals)} min={_fmt(min(finite))} "
                f"max={_fmt(max(finite))} last={_fmt(last)} trend={trend(vals)}",
            )
        )
    rows.sort(key=lambda t: -t[0])
    lines = [line for _, line in rows[:MAX_SERIES]]
    if len(rows) > MAX_SERIES:
        lines.append(f"... and {len(rows) - MAX_SERIES} more series")
    return f"{len(rows)} series (sorted by max):\n" + "\n".join(lines)


_MASKS = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b[0-9a-f]{12,}\b", re.I), "<hex>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ][0-9:.]+Z?"), "<time>"),
    (re.compile(r"\"[^\"]{0,200}\""), '"<*>"'),
    (re.compile(r"\b\d+(?:\.\d+)?(?:ms|s|us|µs|ns|m|h|%)?\b"), "<n>"),
]


def log_template(line: str) -> str:
    out = line.strip()
    for pat, repl in _MASKS:
        out = pat.sub(repl, out)
    return out


def group_log_lines(entries: Iterable[tuple[str, str]]) -> str:
    """``entries`` are (source, line); returns templates with counts and one example each."""
    groups: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
    total = 0
    for source, line in entries:
        total += 1
        groups.setdefault((source, log_template(line)), []).append(line)
    if not total:
        return "(no log lines matched)"
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    lines = [f"{total} log lines, {len(groups)} distinct templates (most frequent first):"]
    for (source, tmpl), examples in ordered[:MAX_TEMPLATES]:
        ex = examples[-1].strip()
        lines.append(f"[{len(examples)}x] {source}: {tmpl[:300]}")
        if ex != tmpl:
            lines.append(f"      e.g. {ex[:300]}")
    if len(ordered) > MAX_TEMPLATES:
        lines.append(f"... and {len(ordered) - MAX_TEMPLATES} more templates")
    return "\n".join(lines)


def _is_error(span: dict[str, Any]) -> tuple[bool, str]:
    msg = ""
    err = False
    for tag in span.get("tags", []) or []:
        k, v = tag.get("key"), tag.get("value")
        if k == "error" and v in (True, "true") or k == "otel.status_code" and v == "ERROR":
            err = True
        elif k in {"http.status_code", "http.response.status_code"} and _num(v) >= 500:
            err = True
            msg = msg or f"HTTP {v}"
        elif k in {"rpc.grpc.status_code"} and _num(v) not in (0.0,) and not math.isnan(_num(v)):
            err = True
            msg = msg or f"gRPC status {v}"
        elif k in {"otel.status_description", "error.message", "exception.message"} and v:
            msg = str(v)
    for log in span.get("logs", []) or []:
        for f in log.get("fields", []) or []:
            if f.get("key") in {"exception.message", "message", "error.object"} and err and not msg:
                msg = str(f.get("value"))
    return err, msg


def trace_error_tree(trace: dict[str, Any]) -> str:
    """The spans of a Jaeger trace on paths that lead to errors, as an indented tree."""
    spans = {s["spanID"]: s for s in trace.get("spans", [])}
    procs = trace.get("processes", {})
    children: dict[str | None, list[str]] = {}
    for sid, s in spans.items():
        parent = next(
            (
                r["spanID"]
                for r in s.get("references", []) or []
                if r.get("refType") == "CHILD_OF" and r.get("spanID") in spans
            ),
            None,
        )
        children.setdefault(parent, []).append(sid)
    errs = {sid: _is_error(s) for sid, s in spans.items()}
    keep: dict[str, bool] = {}

    def mark(sid: str) -> bool:
        if sid in keep:
            return keep[sid]
        keep[sid] = False  # guard cycles
        res = errs[sid][0]
        for c in children.get(sid, []):
            res = mark(c) or res
        keep[sid] = res
        return res

    for root in children.get(None, []):
        mark(root)
    lines: list[str] = []

    def show(sid: str, depth: int) -> None:
        s = spans[sid]
        svc = procs.get(s.get("processID"), {}).get("serviceName", "?")
        err, msg = errs[sid]
        tail = f" ERROR {msg}".rstrip() if err else ""
        lines.append(
            f"{'  ' * depth}{svc}: {s.get('operationName', '?')} ({s.get('duration', 0) / 1000:.1f} ms){tail}"
        )
        for c in sorted(children.get(sid, []), key=lambda c: spans[c].get("startTime", 0)):
            if keep.get(c):
                show(c, depth + 1)

    for root in children.get(None, []):
        if keep.get(root):
            show(root, 0)
    return "\n".join(lines)


def trace_error_sources(trace: dict[str, Any]) -> set[str]:
    """The services a Jaeger trace's errors start at: for each error span none of whose children
    failed, its own service — or, for a client span whose callee left no span of its own (nothing
    answered), the callee it addressed (``peer.service``, ``server.address`` or ``net.peer.name``)."""
    spans = {s["spanID"]: s for s in trace.get("spans", [])}
    procs = trace.get("processes", {})
    children: dict[str, list[str]] = {}
    for sid, s in spans.items():
        for r in s.get("references", []) or []:
            if r.get("refType") == "CHILD_OF" and r.get("spanID") in spans:
                children.setdefault(r["spanID"], []).append(sid)
                break
    out: set[str] = set()
    for sid, s in spans.items():
        if not _is_error(s)[0] or any(_is_error(spans[c])[0] for c in children.get(sid, [])):
            continue
        tags = {t.get("key"): t.get("value") for t in s.get("tags", []) or []}
        service = procs.get(s.get("processID"), {}).get("serviceName")
        if tags.get("span.kind") == "client" and not children.get(sid):
            peer = tags.get("peer.service") or tags.get("server.address") or tags.get("net.peer.name")
            service = str(peer).split(":")[0] if peer else service
        if service:
            out.add(service)
    return out
