"""The ``traces`` tool: Jaeger HTTP API (``/api/services``, ``/api/traces``) with error trees."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from .context import ToolContext
from .http import get_json, parse_duration
from .promql import server_now
from .spec import ToolError, tool
from .summarize import trace_error_tree


def environment_now(ctx: ToolContext) -> float:
    """Now as the environment sees it (Prometheus' time(); wall time when metrics are unavailable)."""
    if ctx.endpoints.prometheus_url and "metrics" not in ctx.masked:
        try:
            return server_now(ctx)
        except ToolError:
            pass
    return time.time()


def services(ctx: ToolContext) -> list[str]:
    body = get_json(ctx.require("jaeger") + "/api/services", timeout=ctx.timeout_s)
    return sorted(str(s) for s in (body.get("data") or []))


def operations(ctx: ToolContext, service: str) -> list[str]:
    body = get_json(ctx.require("jaeger") + f"/api/services/{service}/operations", timeout=ctx.timeout_s)
    ops = body.get("data") or []
    return sorted({o["name"] if isinstance(o, dict) else str(o) for o in ops})


def find_traces(
    ctx: ToolContext,
    service: str,
    operation: str | None = None,
    errors_only: bool = False,
    since: str = "15m",
    limit: int = 20,
    min_duration: str | None = None,
) -> list[dict[str, Any]]:
    end = environment_now(ctx)
    span = parse_duration(since)
    params: dict[str, Any] = {
        "service": service,
        "start": int((end - span) * 1e6),
        "end": int(end * 1e6),
        "limit": max(1, min(limit, 200)),
        "lookback": since,
    }
    if operation:
        params["operation"] = operation
    if errors_only:
        params["tags"] = json.dumps({"error": "true"})
    if min_duration:
        params["minDuration"] = min_duration
    body = get_json(ctx.require("jaeger") + "/api/traces", params=params, timeout=ctx.timeout_s)
    return list(body.get("data") or [])


def summarize_traces(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no traces matched"
    durations: list[float] = []
    trees: Counter[str] = Counter()
    for tr in found:
        spans = tr.get("spans", [])
        roots = [s for s in spans if not s.get("references")] or spans[:1]
        if roots:
            durations.append(roots[0].get("duration", 0) / 1000.0)
        tree = trace_error_tree(tr)
        if tree:
            trees[tree] += 1
    durations.sort()
    lines = [
        f"{len(found)} trace(s); root duration ms: p50={durations[len(durations) // 2]:.1f} "
        f"max={durations[-1]:.1f}"
        if durations
        else f"{len(found)} trace(s)"
    ]
    if trees:
        lines.append(f"{sum(trees.values())} trace(s) contain errors; distinct error trees:")
        for tree, n in trees.most_common(5):
            lines.append(f"[{n}x]\n{tree}")
    else:
        lines.append("no errors in these traces")
    return "\n".join(lines)


@tool(kind="read")
def traces(
    ctx: ToolContext,
    service: str | None = None,
    operation: str | None = None,
    errors_only: bool = False,
    since: str = "15m",
    limit: int = 20,
) -> str:
    """Search Jaeger traces; results are summarised as latency figures and error trees.

    Without `service` it lists the services Jaeger knows. Error trees show only the spans on
    call paths that end in an error, so the deepest failing service is the last line.

    Args:
        service: Service name as Jaeger knows it, e.g. "frontend".
        operation: Operation (span) name to filter on.
        errors_only: Only traces that contain an error span.
        since: How far back to search, e.g. "15m".
        limit: Maximum number of traces to fetch.
    """
    known = services(ctx)
    if not service:
        return "services: " + ", ".join(known) if known else "Jaeger knows no services"
    if service not in known:
        raise ToolError(f"unknown service {service!r}; Jaeger knows: {', '.join(known)}")
    if operation:
        ops = operations(ctx, service)
        if operation not in ops:
            raise ToolError(f"unknown operation {operation!r} for {service}; known: {', '.join(ops[:30])}")
    return summarize_traces(find_traces(ctx, service, operation, errors_only, since, limit))
