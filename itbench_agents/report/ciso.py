"""CISO results in the paper's Table 5 layout: per agent, pass@1 % by task class (the paper's pass:
the violating workload's reports fail), their average, compliance validation (the compliant variant
reported clean), our stricter column (both), ITBench's two other output tasks (a policy generated; evidence — a report
on the violating workload — available) and the time to process (TTP: agent wall seconds of the
passing runs).

Rates are macro averages over scenarios (each scenario's rate over its scored trials) ± the standard
error across scenarios, as the SRE table. Episodes that ended in an environment or harness error are
not scored and are counted as bad runs; every other episode, an agent error or a timeout included,
counts in the denominator.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ..harness.records import EpisodeRecord
from .aggregate import Stat
from .consistency import named_pass, pass_k_html, pass_k_markdown
from .named_scores import episodes_html, error_lines, html_table, macro, rate, stat_mean
from .tables import fmt, md_table

CLASSES = ("kyverno", "k8s-opa", "rhel-opa", "kyverno-update")
PASSES = {"detected": named_pass("detected"), "strict": named_pass("strict")}
"""The passes whose pass@k and pass^k the report shows: the paper's pass and the strict one."""
TABLE5_HEADER = [
    "agent",
    *(f"{c} pass@1 %" for c in CLASSES),
    "avg pass@1 %",
    "compliant clean %",
    "strict pass@1 %",
    "policy generated %",
    "evidence %",
    "TTP s",
    "episodes",
    "bad runs",
]
SCENARIO_HEADER = [
    "scenario",
    "agent",
    "class",
    "trials",
    "detected %",
    "compliant clean %",
    "strict %",
    "why (last trial)",
]


def table5_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    ciso = [r for r in records if r.persona == "ciso"]
    rows = []
    for agent in sorted({r.agent for r in ciso}):
        mine = [r for r in ciso if r.agent == agent]
        row = [agent]
        row += [fmt(macro([r for r in mine if r.category == c], "detected"), pct=True) for c in CLASSES]
        row += [
            fmt(macro(mine, k), pct=True)
            for k in ("detected", "compliant_clean", "strict", "generate_policy", "evidence_available")
        ]
        passing = [
            r.timing.agent_wall_s
            for r in mine
            if r.scored and "detected" in r.scores and r.scores["detected"].passed
        ]
        row.append(fmt(Stat.of(passing)))
        row += [str(len(mine)), str(sum(not r.scored for r in mine))]
        rows.append(row)
    return rows


def scenario_rows(records: Sequence[EpisodeRecord]) -> list[list[str]]:
    cells: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.persona == "ciso":
            cells[(r.scenario_id, r.agent)].append(r)
    rows = []
    for (sid, agent), rs in sorted(cells.items()):
        scored = [r for r in rs if r.scored]
        last = max(rs, key=lambda r: r.trial)
        why = (
            last.scores["strict"].explanation if "strict" in last.scores else (last.error or last.termination)
        )
        rates = [
            f"{100 * rate(scored, k):.0f}" if scored else "—"
            for k in ("detected", "compliant_clean", "strict")
        ]
        rows.append([sid, agent, rs[0].category, str(len(rs)), *rates, why])
    return rows


def ciso_markdown(records: Sequence[EpisodeRecord]) -> str:
    ciso = [r for r in records if r.persona == "ciso"]
    parts = [
        "## CISO results (Table 5 layout)",
        "",
        "pass@1 (the paper's pass): Kyverno classes — a report scoped to the violating workload fails; "
        "k8s-opa and rhel-opa — the agent's script (kubectl) or playbook (Ansible), run against the "
        "violating workload or host, and its policy give `data.check.result` false. strict: and on the "
        "compliant variant nothing fails (the OPA classes: the same files give true). Mean ± standard "
        "error over scenarios.",
        "",
        md_table(TABLE5_HEADER, table5_rows(ciso), escape=True),
        "",
        "## CISO per scenario",
        "",
        md_table(SCENARIO_HEADER, scenario_rows(ciso), escape=True),
    ]
    parts += pass_k_markdown("CISO", ciso, PASSES)
    parts += error_lines("CISO", ciso)
    return "\n".join(parts) + "\n"


def class_figure(records: Sequence[EpisodeRecord]) -> str | None:
    """pass@1 and strict pass@1 by task class and agent, as inline SVG; None without CISO episodes."""
    from .figures import rate_bars_svg

    ciso = [r for r in records if r.persona == "ciso"]
    rates = {
        (c, agent): (stat_mean(macro(mine, "detected")), stat_mean(macro(mine, "strict")))
        for agent in sorted({r.agent for r in ciso})
        for c in CLASSES
        if (mine := [r for r in ciso if r.agent == agent and r.category == c])
    }
    return rate_bars_svg("task class", rates, ("pass@1", "strict pass@1")) if rates else None


def ciso_html(records: Sequence[EpisodeRecord], links: dict[str, str]) -> str:
    import html

    ciso = [r for r in records if r.persona == "ciso"]
    esc = [[html.escape(c) for c in row] for row in table5_rows(ciso)]
    out = ["<h2 id='table5'>CISO results (Table 5 layout)</h2>", html_table(TABLE5_HEADER, esc)]
    figure = class_figure(ciso)
    if figure:
        out.append(f"<div class='figure'>{figure}</div>")
    out.append("<h2>CISO per scenario</h2>")
    out.append(html_table(SCENARIO_HEADER, [[html.escape(c) for c in row] for row in scenario_rows(ciso)]))
    out += pass_k_html("CISO", ciso, PASSES)
    out.append(episodes_html("CISO", ciso, links, lambda v: "✓" if v.passed else "✗"))
    return "\n".join(out)
