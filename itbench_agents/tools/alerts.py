"""The ``alerts`` tool: the alerts Prometheus is evaluating (``/api/v1/alerts``)."""

from __future__ import annotations

from typing import Any

from .context import ToolContext
from .http import get_json
from .spec import ToolError, tool


def fetch_alerts(ctx: ToolContext) -> list[dict[str, Any]]:
    body = get_json(ctx.require("prometheus") + "/api/v1/alerts", timeout=ctx.timeout_s)
    if not isinstance(body, dict) or body.get("status") != "success":
        raise ToolError(f"unexpected answer from /api/v1/alerts: {str(body)[:300]}")
    alerts = body.get("data", {}).get("alerts", [])
    return [a for a in alerts if isinstance(a, dict)]


def firing(ctx: ToolContext) -> list[dict[str, Any]]:
    return [a for a in fetch_alerts(ctx) if a.get("state") == "firing"]


def format_alerts(alerts: list[dict[str, Any]]) -> str:
    if not alerts:
        return "no alerts"
    lines = []
    for a in sorted(alerts, key=lambda a: (a.get("state", ""), a.get("labels", {}).get("alertname", ""))):
        labels = dict(a.get("labels", {}))
        name = labels.pop("alertname", "?")
        lbl = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
        ann = a.get("annotations", {}) or {}
        desc = ann.get("summary") or ann.get("description") or ""
        lines.append(
            f"{a.get('state', '?').upper()} {name} {{{lbl}}} since {a.get('activeAt', '?')} value={a.get('value', '?')}"
            + (f" — {desc}" if desc else "")
        )
    return f"{len(alerts)} alert(s):\n" + "\n".join(lines)


@tool(kind="read")
def alerts(ctx: ToolContext, state: str = "firing") -> str:
    """List the alerts Prometheus is evaluating, with their labels, start time and value.

    Args:
        state: "firing" (default), "pending" or "all".
    """
    if state not in {"firing", "pending", "all"}:
        raise ToolError('state must be "firing", "pending" or "all"')
    got = fetch_alerts(ctx)
    if state != "all":
        got = [a for a in got if a.get("state") == state]
    return format_alerts(got)
