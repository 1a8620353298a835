"""The ``promql`` tool: PromQL instant and range queries through prometheus-api-client."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from .context import ToolContext
from .http import parse_duration
from .spec import ToolError, tool
from .summarize import digest_matrix, digest_vector


def _client(ctx: ToolContext) -> Any:
    from prometheus_api_client import PrometheusConnect

    return PrometheusConnect(url=ctx.require("prometheus"), disable_ssl=True)


def _explain(exc: Exception) -> str:
    """prometheus-api-client puts the body in the message: pull Prometheus' ``error`` out of it."""
    text = str(exc)
    m = re.search(r'"error"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
    code = re.search(r"HTTP Status Code (\d+)", text)
    if m:
        return f"Prometheus rejected the query ({code.group(1) if code else 'error'}): {m.group(1)}"
    return f"Prometheus query failed: {text[:400]}"


def server_now(ctx: ToolContext) -> float:
    """The server's notion of now (the twin's clock may run ahead of wall time)."""
    try:
        res = _client(ctx).custom_query("time()")
    except Exception as exc:
        raise ToolError(_explain(exc)) from None
    if isinstance(res, list) and len(res) == 2:
        return float(res[0])
    return datetime.now(UTC).timestamp()


def run_query(ctx: ToolContext, q: str, range_: str | None, step: str | None) -> str:
    client = _client(ctx)
    try:
        if not range_:
            res = client.custom_query(q)
            if isinstance(res, list) and len(res) == 2 and not isinstance(res[0], dict):
                return f"scalar {res[1]}"
            return digest_vector(res)
        span = parse_duration(range_)
        end = server_now(ctx)
        step_s = parse_duration(step) if step else max(span / 60.0, 15.0)
        res = client.custom_query_range(
            q,
            start_time=datetime.fromtimestamp(end - span, UTC),
            end_time=datetime.fromtimestamp(end, UTC),
            step=f"{step_s:g}s",
        )
        return digest_matrix(res)
    except ToolError:
        raise
    except Exception as exc:
        raise ToolError(_explain(exc)) from None


@tool(kind="read")
def promql(ctx: ToolContext, query: str, range: str | None = None, step: str | None = None) -> str:
    """Run a PromQL query on Prometheus; long results come back as per-series digests.

    Without `range` it is an instant query (one value per series). With `range` (e.g. "30m") it
    is a range query ending now, summarised per series as min / max / last / trend.

    Args:
        query: PromQL expression, e.g. `sum by (service_name) (rate(traces_span_metrics_calls_total{status_code="STATUS_CODE_ERROR"}[5m]))`.
        range: Look-back window for a range query, e.g. "15m" or "1h".
        step: Resolution of a range query, e.g. "30s" (default: range/60, at least 15s).
    """
    return run_query(ctx, query, range, step)
