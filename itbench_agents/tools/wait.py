"""The ``wait`` tool: let time pass (on the twin it fast-forwards the virtual clock)."""

from __future__ import annotations

import time

from .context import ToolContext
from .http import post_json
from .spec import ToolError, tool

MAX_WAIT_S = 900


def advance(ctx: ToolContext, seconds: int) -> None:
    if ctx.on_twin:
        post_json(
            ctx.endpoints.kube_url.rstrip("/") + "/itbench/v1/advance",
            {"seconds": seconds},
            timeout=120,
            headers=ctx.kube_headers(),
        )
    else:
        time.sleep(seconds)


@tool(kind="read")
def wait(ctx: ToolContext, seconds: int = 60) -> str:
    """Wait before checking again, e.g. after a fix, so controllers act and alerts re-evaluate.

    Args:
        seconds: How long to wait (1 to 900).
    """
    if not 1 <= seconds <= MAX_WAIT_S:
        raise ToolError(f"seconds must be between 1 and {MAX_WAIT_S}")
    advance(ctx, seconds)
    return f"waited {seconds}s"
