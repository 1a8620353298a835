"""The ``opencost`` tool: what OpenCost charges, per namespace, controller, pod or container, over a
window (``/allocation/compute``), as a table the model can read. OpenCost runs where the
environment has one (FinOps episodes on the twin, or a cluster's own OpenCost): elsewhere the tool
says so."""

from __future__ import annotations

from typing import Any

from .context import ToolContext
from .http import get_json
from .spec import ToolError, tool

MAX_ROWS = 40
GIB = 2.0**30


def _row(name: str, a: dict[str, Any]) -> str:
    def f(key: str) -> float:
        v = a.get(key)
        return float(v) if isinstance(v, (int, float)) else 0.0

    return (
        f"{name:<48} {f('cpuCoreRequestAverage'):>7.3f} {f('cpuCoreUsageAverage'):>7.3f} "
        f"{f('ramByteRequestAverage') / GIB:>8.3f} {f('ramByteUsageAverage') / GIB:>8.3f} "
        f"{f('cpuCost'):>9.5f} {f('ramCost'):>9.5f} {f('totalCost'):>9.5f} "
        f"{f('cpuEfficiency'):>6.0%} {f('ramEfficiency'):>6.0%}"
    )


HEADER = (
    f"{'name':<48} {'cpu req':>7} {'cpu use':>7} {'ram req':>8} {'ram use':>8} "
    f"{'cpu $':>9} {'ram $':>9} {'total $':>9} {'cpu ef':>6} {'ram ef':>6}"
)


def format_sets(body: Any, window: str) -> str:
    if not isinstance(body, dict) or body.get("code") not in (200, None):
        raise ToolError(f"unexpected answer from OpenCost: {str(body)[:300]}")
    sets = [s for s in body.get("data") or [] if isinstance(s, dict)]
    if not any(sets):
        return f"no allocations in window {window}"
    out = []
    for i, s in enumerate(sets):
        rows = sorted(
            ((n, a) for n, a in s.items() if isinstance(a, dict)),
            key=lambda na: -float(na[1].get("totalCost") or 0.0),
        )
        first = rows[0][1] if rows else {}
        span = f"{first.get('start', '?')} – {first.get('end', '?')}" if first else ""
        out.append(f"set {i + 1}/{len(sets)} {span} (cores and GiB are averages; $ over the set's span)")
        out.append(HEADER)
        out.extend(_row(n, a) for n, a in rows[:MAX_ROWS])
        if len(rows) > MAX_ROWS:
            out.append(f"... {len(rows) - MAX_ROWS} more (narrow with filter or aggregate)")
    return "\n".join(out)


@tool(kind="read")
def opencost(
    ctx: ToolContext,
    window: str = "1h",
    aggregate: str = "namespace",
    step: str = "",
    filter: str = "",
    idle: bool = False,
) -> str:
    """Ask OpenCost what the cluster costs: requests, usage, cost and efficiency per namespace,
    controller, pod or container over a window (its /allocation/compute API), most expensive first.

    Args:
        window: "1h", "24h", "7d", "today", "lastweek", "7d offset 1h" (the week before the last hour), or "START,END" in RFC 3339.
        aggregate: "namespace", "controller", "controllerKind", "pod", "container", "node", "label:app"..., comma-separated for several (e.g. "controller,container").
        step: split the window into sets of this length ("1h", "1d"); empty for one set over the whole window.
        filter: OpenCost's filter language, e.g. namespace:"otel-demo" or controllerName:"frontend".
        idle: include the cluster's idle cost as __idle__.
    """
    url = ctx.endpoints.opencost_url
    if not url:
        raise ToolError("no OpenCost endpoint in this environment (OpenCost runs in FinOps episodes)")
    params: dict[str, str] = {
        "window": window,
        "aggregate": aggregate,
        "includeIdle": "true" if idle else "false",
    }
    if step:
        params["step"] = step
    else:
        params["accumulate"] = "true"
    if filter:
        params["filter"] = filter
    body = get_json(str(url).rstrip("/") + "/allocation/compute", params=params, timeout=ctx.timeout_s)
    return format_sets(body, window)
