"""Table rows shared by the console, Markdown and HTML reports (the paper's Table 4 layout)."""

from __future__ import annotations

import math

from rich.table import Table

from .aggregate import GroupResult, Stat, Summary

TABLE4_HEADER = [
    "agent",
    "diagnosis pass@1 %",
    "FL NTAM",
    "FPC NTAM",
    "MTTD s",
    "mitigation pass@1 %",
    "MTTR s",
    "strict diagnosis % (ITBench-Lite)",
    "episodes",
    "bad runs",
    "tokens/episode",
    "cost $/episode",
]


def md_table(header: list[str], rows: list[list[str]], *, escape: bool = False) -> str:
    """A Markdown table; with ``escape``, ``|`` inside cells is escaped (free-text cells)."""

    def cells(row: list[str]) -> str:
        return " | ".join(c.replace("|", "\\|") if escape else c for c in row)

    out = ["| " + cells(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + cells(r) + " |" for r in rows]
    return "\n".join(out)


TIMES_HEADER = ["agent", "MTTD wall s", "MTTD twin s", "MTTR wall s", "MTTR twin s", "submitted %"]


def fmt(s: Stat | None, pct: bool = False, digits: int = 2) -> str:
    if s is None or s.n == 0:
        return "—"
    if math.isinf(s.mean):
        return "∞"
    if math.isnan(s.mean):
        return "—"
    k = 100.0 if pct else 1.0
    se = " ± n/a" if math.isnan(s.stderr) else f" ± {s.stderr * k:.{digits}f}"  # n/a: one value
    return f"{s.mean * k:.{digits}f}{se}"


def fmt_time(s: Stat) -> str:
    if s.n == 0 or math.isinf(s.mean):
        return "∞"
    return fmt(s)


def agent_label(g: GroupResult) -> str:
    """The agent of a headline row, with its condition when it is not the default (traces on)."""
    return g.agent if g.group == "traces on" else f"{g.agent} ({g.group})"


def table4_row(g: GroupResult) -> list[str]:
    return [
        agent_label(g),
        fmt(g.diagnosis, pct=True),
        fmt(g.ntam_fl),
        fmt(g.ntam_fpc),
        fmt_time(g.mttd_wall),
        fmt(g.mitigation, pct=True),
        fmt_time(g.mttr_wall),
        fmt(g.diagnosis_strict, pct=True),
        str(g.episodes),
        str(g.bad_runs),
        f"{g.tokens:.0f}",
        f"{g.cost_usd:.4f}",
    ]


def times_row(g: GroupResult) -> list[str]:
    return [
        agent_label(g),
        fmt_time(g.mttd_wall),
        fmt_time(g.mttd_twin),
        fmt_time(g.mttr_wall),
        fmt_time(g.mttr_twin),
        f"{g.submitted * 100:.1f}",
    ]


def overall_table(summary: Summary) -> Table:
    t = Table(title="SRE results (mean ± standard error over scenarios)")
    for h in TABLE4_HEADER:
        t.add_column(h)
    for g in summary.overall:
        t.add_row(*table4_row(g))
    return t
