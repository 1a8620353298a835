"""FinOps results: cost anomaly detection beside the paper's Table 6 (which the camera-ready extended
with anomaly detection, F1 0.35). Per agent: ``pinpointed`` pass@1 % (every true resource named, at
least half of the named ones right — the pass), ITBench-Lite's ``root_cause_resource`` %, and mean
precision, recall and F1 over the resources named, each a macro average over scenarios ± the
standard error across scenarios, as the other tables. The interactive cost scenarios' columns
(diagnosis and mitigation pass@1, the four proximity metrics) join this table when they land.

Episodes that ended in an environment or harness error are not scored (bad runs); every other
episode counts, an agent that answered nothing included.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence

from ..evaluation.aggregate import Stat
from ..harness.records import EpisodeRecord
from .tables import fmt, md_table
from .trajectory_html import episode_link

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


def _rate(records: Sequence[EpisodeRecord], score: str) -> float:
    return sum(r.scores[score].value if score in r.scores else 0.0 for r in records) / len(records)


def _macro(records: Sequence[EpisodeRecord], score: str) -> Stat:
    by_scenario: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.scored:
            by_scenario[r.scenario_id].append(r)
    return Stat.of([_rate(rs, score) for _, rs in sorted(by_scenario.items())])


def table6_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    fin = [r for r in records if r.persona == "finops"]
    rows = []
    for agent in sorted({r.agent for r in fin}):
        mine = [r for r in fin if r.agent == agent]
        row = [agent]
        row += [fmt(_macro(mine, k), pct=True) for k in ("pinpointed", "root_cause_resource")]
        row += [fmt(_macro(mine, k)) for k in ("precision", "recall", "f1")]
        row.append(fmt(Stat.of([r.timing.agent_wall_s for r in mine if r.scored])))
        row += [str(len(mine)), str(sum(not r.scored for r in mine))]
        rows.append(row)
    return rows


def scenario_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    cells: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.persona == "finops":
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
        pin = f"{100 * _rate(scored, 'pinpointed'):.0f}" if scored else "—"
        f1 = f"{_rate(scored, 'f1'):.2f}" if scored else "—"
        rows.append([sid, agent, str(len(rs)), pin, f1, why])
    return rows


INTRO = (
    "Cost anomaly detection (ITBench-Lite's format): the agent names the resource an anomaly comes "
    "from. pinpointed: every true resource named and at least half of those named right (the pass); "
    "root_cause_resource: ITBench-Lite's metric (every true resource named, however many others); "
    "precision, recall, F1 over the resources named (the paper's F1 for anomaly detection: 0.35). "
    "Mean ± standard error over scenarios."
)


def finops_markdown(records: Sequence[EpisodeRecord]) -> str:
    fin = [r for r in records if r.persona == "finops"]
    parts = [
        "## FinOps results (Table 6 layout: anomaly detection)",
        "",
        INTRO,
        "",
        md_table(TABLE6_HEADER, table6_rows(fin), escape=True),
        "",
        "## FinOps per scenario",
        "",
        md_table(SCENARIO_HEADER, scenario_rows(fin), escape=True),
    ]
    errs = [r for r in fin if r.error]
    if errs:
        parts += ["", "## FinOps episodes with errors", ""]
        parts += [f"- `{r.episode_id}` ({r.termination}): {r.error}" for r in errs[:200]]
    return "\n".join(parts) + "\n"


def finops_html(records: Sequence[EpisodeRecord], links: dict[str, str]) -> str:
    def table(header: list[str], rows: list[list[str]]) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    fin = [r for r in records if r.persona == "finops"]
    out = [
        "<h2 id='table6'>FinOps results (Table 6 layout: anomaly detection)</h2>",
        f"<p>{html.escape(INTRO)}</p>",
        table(TABLE6_HEADER, [[html.escape(c) for c in row] for row in table6_rows(fin)]),
        "<h2>FinOps per scenario</h2>",
        table(SCENARIO_HEADER, [[html.escape(c) for c in row] for row in scenario_rows(fin)]),
    ]
    rows = []
    for r in sorted(fin, key=lambda r: (r.scenario_id, r.agent, r.trial)):
        marks = " ".join(f"{html.escape(k)} {v.value:.2f}" for k, v in r.scores.items()) or "–"
        rows.append(
            [
                episode_link(r.episode_id, links),
                html.escape(r.termination),
                marks,
                f"{r.wall_s:.1f}",
                html.escape(r.error or ""),
            ]
        )
    out.append(
        "<h2>FinOps episodes</h2>" + table(["episode", "termination", "scores", "wall s", "error"], rows)
    )
    return "\n".join(out)
