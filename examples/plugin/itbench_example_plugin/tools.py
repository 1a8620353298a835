"""The ``runbook`` tool: what to do about an alert, as a team's runbook says it."""

from __future__ import annotations

from itbench_agents.tools.context import ToolContext
from itbench_agents.tools.registry import ToolError, tool

RUNBOOKS = {
    "HighRequestErrorRate": (
        "Requests fail. Follow the errors to the deepest failing service; a Deployment scaled to "
        "zero replicas leaves its Service without endpoints: scale it back up."
    ),
    "HighRequestLatency": "Requests are slow. Look for the slowest hop in the traces; check its resources.",
}


@tool(kind="read")
def runbook(ctx: ToolContext, alert: str) -> str:
    """Look up the team's runbook for an alert: what it means and what to check first.

    Args:
        alert: The alert name, e.g. "HighRequestErrorRate".
    """
    if alert not in RUNBOOKS:
        raise ToolError(f"no runbook for {alert!r}; known: {', '.join(sorted(RUNBOOKS))}")
    return RUNBOOKS[alert]
