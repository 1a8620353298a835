"""The ``logql`` tool: LogQL queries on Loki (``/loki/api/v1/query_range``), grouped by template."""

from __future__ import annotations

from .context import ToolContext
from .http import get_json, parse_duration
from .promql import server_now
from .spec import ToolError, tool
from .summarize import digest_matrix, digest_vector, group_log_lines


def run_logql(ctx: ToolContext, query: str, since: str = "15m", limit: int = 500) -> str:
    base = ctx.require("loki")
    span = parse_duration(since)
    try:
        end = server_now(ctx) if ctx.endpoints.prometheus_url and "metrics" not in ctx.masked else None
    except ToolError:
        end = None
    params: dict[str, str | int] = {
        "query": query,
        "limit": max(1, min(limit, 5000)),
        "direction": "backward",
    }
    if end is not None:
        params["start"] = int((end - span) * 1e9)
        params["end"] = int(end * 1e9)
    else:
        params["since"] = f"{int(span)}s"
    body = get_json(base + "/loki/api/v1/query_range", params=params, timeout=ctx.timeout_s)
    data = body.get("data", {}) if isinstance(body, dict) else {}
    rtype, result = data.get("resultType"), data.get("result", [])
    if rtype == "streams":
        entries: list[tuple[str, str]] = []
        for stream in result:
            labels = stream.get("stream", {})
            source = (
                labels.get("service_name")
                or labels.get("app")
                or labels.get("pod")
                or labels.get("job")
                or "?"
            )
            for _ts, line in reversed(stream.get("values", [])):
                entries.append((str(source), str(line)))
        return group_log_lines(entries)
    if rtype == "matrix":
        return digest_matrix(result)
    if rtype == "vector":
        return digest_vector(result)
    raise ToolError(f"unexpected Loki answer: {str(body)[:300]}")


@tool(kind="read")
def logql(ctx: ToolContext, query: str, since: str = "15m", limit: int = 500) -> str:
    """Run a LogQL query on Loki; log lines come back grouped by template with counts.

    Args:
        query: LogQL, e.g. `{service_name="checkout"} |= "error"` or a metric query such as `sum by (service_name) (count_over_time({namespace="otel-demo"} |= "error" [5m]))`.
        since: How far back to look, e.g. "15m" or "1h".
        limit: Maximum number of log lines to fetch.
    """
    return run_logql(ctx, query, since, limit)
