"""Named tool sets: what each phase of the SRE agents gets for ``--tools direct|nl2``."""

from __future__ import annotations

from typing import Literal

from .registry import ToolSpec, get_tool

ToolMode = Literal["direct", "nl2"]

DIRECT = ["alerts", "kubectl", "promql", "logql", "traces", "topology", "wait"]
NL2 = ["nl2alerts", "nl2kubectl", "nl2metrics", "nl2logs", "nl2traces", "topology", "wait"]


def toolset(mode: ToolMode, masked: set[str] | None = None) -> list[ToolSpec]:
    """The tools of ``mode``, minus those whose data source is masked (e.g. traces off)."""
    names = DIRECT if mode == "direct" else NL2
    masked = masked or set()
    drop = set()
    if "traces" in masked:
        drop |= {"traces", "nl2traces"}
    if "logs" in masked:
        drop |= {"logql", "nl2logs"}
    if "metrics" in masked:
        drop |= {"promql", "nl2metrics"}
    return [get_tool(n) for n in names if n not in drop]
