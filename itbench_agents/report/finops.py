"""FinOps results in the paper's Table 6 layout, and cost anomaly detection beside it (the
camera-ready's extension, F1 0.35).

- Cost incidents on the twin: per agent, diagnosis and mitigation pass@1 % (macro averages over
  scenarios ± standard error, as the SRE table: the same scorers) and the four proximity metrics
  of the end state's cost to the optimal one (``personas/finops/proximity.py``), mean ± standard
  deviation over episodes as the paper gives them.
- Anomaly detection: ``pinpointed`` pass@1 % (every true resource named, at least half of the named
  ones right — the pass), ITBench-Lite's ``root_cause_resource`` %, and mean precision, recall and
  F1 over the resources named, macro averages over scenarios ± standard error.

Episodes that ended in an environment or harness error are not scored (bad runs); every other
episode counts, an agent that answered nothing included.
"""

from __future__ import annotations

import html
import statistics
from collections import defaultdict
from collections.abc import Sequence

from ..harness.records import EpisodeRecord
from .aggregate import Stat
from .consistency import Pass, named_pass, pass_k_html, pass_k_markdown
from .named_scores import episodes_html, error_lines, html_table, macro, rate, stat_mean
from .tables import fmt, md_table

PROXIMITY = (
    "proximity_cpu_cost",
    "proximity_ram_cost",
    "proximity_cpu_efficiency",
    "proximity_ram_efficiency",
)
TWIN_HEADER = [
    "agent",
    "diagnosis pass@1 %",
    "mitigation pass@1 %",
    "prox CPU cost",
    "prox mem cost",
    "prox CPU eff",
    "prox mem eff",
    "episodes",
    "bad runs",
]
TABLE6_HEADER = [
    "agent",
    "pinpointed pass@1 %",
    "root_cause_resource %",
    "precision",
    "recall",
    "F1",
    "time s",
    "episodes",
    "bad runs",
]
SCENARIO_HEADER = ["scenario", "agent", "trials", "pinpointed %", "F1", "why (last trial)"]
TWIN_SCENARIO_HEADER = [
    "scenario",
    "agent",
    "trials",
    "diagnosis %",
    "mitigation %",
    "prox CPU cost",
    "why (last trial)",
]


def _is_anomaly(r: EpisodeRecord) -> bool:
    return r.category == "anomaly"


def _mean_std(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.2f} ± n/a"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def twin_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    """Table 6: cost incidents on the twin."""
    fin = [r for r in records if r.persona == "finops" and not _is_anomaly(r)]
    rows = []
    for agent in sorted({r.agent for r in fin}):
        mine = [r for r in fin if r.agent == agent]
        row = [agent]
        row.append(fmt(macro(mine, lambda r: float(bool(r.diagnosis and r.diagnosis.correct))), pct=True))
        row.append(fmt(macro(mine, lambda r: float(bool(r.mitigation and r.mitigation.passed))), pct=True))
        for k in PROXIMITY:
            row.append(_mean_std([r.scores[k].value for r in mine if r.scored and k in r.scores]))
        row += [str(len(mine)), str(sum(not r.scored for r in mine))]
        rows.append(row)
    return rows


def table6_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    """Anomaly detection."""
    fin = [r for r in records if r.persona == "finops" and _is_anomaly(r)]
    rows = []
    for agent in sorted({r.agent for r in fin}):
        mine = [r for r in fin if r.agent == agent]
        row = [agent]
        row += [fmt(macro(mine, k), pct=True) for k in ("pinpointed", "root_cause_resource")]
        row += [fmt(macro(mine, k)) for k in ("precision", "recall", "f1")]
        row.append(fmt(Stat.of([r.timing.agent_wall_s for r in mine if r.scored])))
        row += [str(len(mine)), str(sum(not r.scored for r in mine))]
        rows.append(row)
    return rows


def scenario_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    cells: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.persona == "finops" and _is_anomaly(r):
            cells[(r.scenario_id, r.agent)].append(r)
    rows = []
    for (sid, agent), rs in sorted(cells.items()):
        scored = [r for r in rs if r.scored]
        last = max(rs, key=lambda r: r.trial)
        why = (
            last.scores["pinpointed"].explanation
            if "pinpointed" in last.scores
            else (last.error or last.termination)
        )
        pin = f"{100 * rate(scored, 'pinpointed'):.0f}" if scored else "—"
        f1 = f"{rate(scored, 'f1'):.2f}" if scored else "—"
        rows.append([sid, agent, str(len(rs)), pin, f1, why])
    return rows


def twin_scenario_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    cells: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.persona == "finops" and not _is_anomaly(r):
            cells[(r.scenario_id, r.agent)].append(r)
    rows = []
    for (sid, agent), rs in sorted(cells.items()):
        scored = [r for r in rs if r.scored]
        last = max(rs, key=lambda r: r.trial)
        if last.mitigation is not None and last.mitigation.passed:
            why = "mitigated"
        else:
            why = (last.mitigation.reason if last.mitigation else None) or last.error or last.termination
        diag = sum(bool(r.diagnosis and r.diagnosis.correct) for r in scored)
        mit = sum(bool(r.mitigation and r.mitigation.passed) for r in scored)
        prox = [r.scores["proximity_cpu_cost"].value for r in scored if "proximity_cpu_cost" in r.scores]
        rows.append(
            [
                sid,
                agent,
                str(len(rs)),
                f"{100 * diag / len(scored):.0f}" if scored else "—",
                f"{100 * mit / len(scored):.0f}" if scored else "—",
                f"{statistics.mean(prox):.2f}" if prox else "—",
                why or "passed",
            ]
        )
    return rows


TWIN_INTRO = (
    "Cost incidents on the twin (a cost alert fired; OpenCost beside the app): diagnosis and "
    "mitigation pass@1 as in the SRE table (mitigation: the cost alert cleared and the app works end "
    "to end, nothing healthy broken), mean ± standard error over scenarios; the paper's proximity "
    "metrics, 1 − |observed − optimal| / optimal (floored at 0) of the namespace's hourly CPU and "
    "memory cost and CPU and memory efficiency, the last hour after the agent against the hour "
    "before the fault, mean ± standard deviation over episodes."
)

INTRO = (
    "Cost anomaly detection (ITBench-Lite's format): the agent names the resource an anomaly comes "
    "from. pinpointed: every true resource named and at least half of those named right (the pass); "
    "root_cause_resource: ITBench-Lite's metric (every true resource named, however many others); "
    "precision, recall, F1 over the resources named (the paper's F1 for anomaly detection: 0.35). "
    "Mean ± standard error over scenarios."
)


INCIDENT_PASSES: dict[str, Pass] = {
    "diagnosis": lambda r: bool(r.diagnosis and r.diagnosis.correct),
    "mitigation": lambda r: bool(r.mitigation and r.mitigation.passed),
}
ANOMALY_PASSES: dict[str, Pass] = {"pinpointed": named_pass("pinpointed")}


def finops_markdown(records: Sequence[EpisodeRecord]) -> str:
    fin = [r for r in records if r.persona == "finops"]
    parts: list[str] = []
    if any(not _is_anomaly(r) for r in fin):
        parts += [
            "## FinOps results (Table 6 layout)",
            "",
            TWIN_INTRO,
            "",
            md_table(TWIN_HEADER, twin_rows(fin), escape=True),
            "",
            "## FinOps cost incidents per scenario",
            "",
            md_table(TWIN_SCENARIO_HEADER, twin_scenario_rows(fin), escape=True),
            "",
        ]
        parts += pass_k_markdown(
            "FinOps cost incidents", [r for r in fin if not _is_anomaly(r)], INCIDENT_PASSES
        )
    if any(_is_anomaly(r) for r in fin):
        parts += [
            "## FinOps anomaly detection",
            "",
            INTRO,
            "",
            md_table(TABLE6_HEADER, table6_rows(fin), escape=True),
            "",
            "## FinOps anomaly detection per scenario",
            "",
            md_table(SCENARIO_HEADER, scenario_rows(fin), escape=True),
        ]
        parts += pass_k_markdown(
            "FinOps anomaly detection", [r for r in fin if _is_anomaly(r)], ANOMALY_PASSES
        )
    parts += error_lines("FinOps", fin)
    return "\n".join(parts) + "\n"


def incident_figure(records: Sequence[EpisodeRecord]) -> str | None:
    """Cost incidents: diagnosis and mitigation pass@1 by fault category and agent (inline SVG)."""
    from .figures import rate_bars_svg

    fin = [r for r in records if r.persona == "finops" and not _is_anomaly(r)]
    rates = {
        (cat, agent): (
            stat_mean(macro(mine, lambda r: float(bool(r.diagnosis and r.diagnosis.correct)))),
            stat_mean(macro(mine, lambda r: float(bool(r.mitigation and r.mitigation.passed)))),
        )
        for agent in sorted({r.agent for r in fin})
        for cat in sorted({r.category for r in fin})
        if (mine := [r for r in fin if r.agent == agent and r.category == cat])
    }
    return rate_bars_svg("fault category", rates) if rates else None


def anomaly_figure(records: Sequence[EpisodeRecord]) -> str | None:
    """Anomaly detection per agent: pinpointed, ITBench-Lite's root_cause_resource, precision,
    recall and F1 (macro averages over scenarios, as Table 6's anomaly columns)."""
    from .figures import rate_bars_svg

    fin = [r for r in records if r.persona == "finops" and _is_anomaly(r)]
    names = ("pinpointed", "root_cause_resource", "precision", "recall", "f1")
    rates = {
        (name, agent): (stat_mean(macro([r for r in fin if r.agent == agent], name)),)
        for agent in sorted({r.agent for r in fin})
        for name in names
    }
    return rate_bars_svg("score (anomaly detection)", rates, ("mean",)) if rates else None


def finops_html(records: Sequence[EpisodeRecord], links: dict[str, str]) -> str:
    fin = [r for r in records if r.persona == "finops"]
    out: list[str] = []
    if any(not _is_anomaly(r) for r in fin):
        out += [
            "<h2 id='table6'>FinOps results (Table 6 layout)</h2>",
            f"<p>{html.escape(TWIN_INTRO)}</p>",
            html_table(TWIN_HEADER, [[html.escape(c) for c in row] for row in twin_rows(fin)]),
            f"<div class='figure'>{incident_figure(fin)}</div>",
            "<h2>FinOps cost incidents per scenario</h2>",
            html_table(
                TWIN_SCENARIO_HEADER, [[html.escape(c) for c in row] for row in twin_scenario_rows(fin)]
            ),
        ]
        out += pass_k_html("FinOps cost incidents", [r for r in fin if not _is_anomaly(r)], INCIDENT_PASSES)
    if any(_is_anomaly(r) for r in fin):
        out += [
            "<h2 id='anomaly'>FinOps anomaly detection</h2>",
            f"<p>{html.escape(INTRO)}</p>",
            html_table(TABLE6_HEADER, [[html.escape(c) for c in row] for row in table6_rows(fin)]),
            f"<div class='figure'>{anomaly_figure(fin)}</div>",
            "<h2>FinOps anomaly detection per scenario</h2>",
            html_table(SCENARIO_HEADER, [[html.escape(c) for c in row] for row in scenario_rows(fin)]),
        ]
        out += pass_k_html("FinOps anomaly detection", [r for r in fin if _is_anomaly(r)], ANOMALY_PASSES)
    out.append(episodes_html("FinOps", fin, links, lambda v: f"{v.value:.2f}"))
    return "\n".join(out)
