"""pass@k and pass^k across trials: how often an agent passes at least once in k trials, and how
often it passes every time (``evaluation/stats.py``). The SRE table and figure take them from
the scenario results (``build.py``); :func:`pass_k_table` computes them from a persona's records
for its own passes (CISO's ``detected`` and ``strict``; FinOps' diagnosis, mitigation and
``pinpointed``)."""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from ..evaluation.stats import pass_at_k, pass_hat_k
from ..harness.records import EpisodeRecord
from .named_scores import html_table
from .tables import md_table

ESTIMATORS: dict[str, Callable[[int, int, int], float]] = {"pass@k": pass_at_k, "pass^k": pass_hat_k}
"""pass@k: at least one of k trials passes (Chen et al.); pass^k: all k pass (τ-bench's reliability)."""
PASSK_NOTE = (
    "pass@k: the chance that at least one of k trials passes (Chen et al.'s unbiased estimator); "
    "pass^k: the chance that all k pass (τ-bench's), the agent's reliability. pass@1 = pass^1 is "
    "the results table's pass@1; the wider the two part as k grows, the more an agent's passes "
    "are luck. Macro averages over scenarios, for k up to the fewest trials of a scenario."
)

Pass = Callable[[EpisodeRecord], bool]
"""Whether an episode passed one metric."""


def named_pass(score: str) -> Pass:
    """A named score's pass (an episode without it did not pass, as ``named_scores.rate`` counts it)."""
    return lambda r: score in r.scores and r.scores[score].passed


def macro_curve(per_scenario: Sequence[Mapping[int, float]], ks: Sequence[int]) -> list[float | None]:
    """For each k, the mean over the scenarios that have it of their estimate (None: none has it)."""
    out: list[float | None] = []
    for k in ks:
        vals = [est[k] for est in per_scenario if k in est]
        out.append(sum(vals) / len(vals) if vals else None)
    return out


def pass_k_table(
    records: Sequence[EpisodeRecord], passes: Mapping[str, Pass]
) -> tuple[list[str], list[list[str]]]:
    """A row per agent and estimator, a column per metric of ``passes`` and k (percentages) over
    the scored episodes; empty when a scenario ran only once (pass@1 is then the table itself)."""
    trials: dict[tuple[str, str], int] = defaultdict(int)  # (agent, scenario) → scored episodes
    by_metric: dict[tuple[str, str, str], list[bool]] = defaultdict(list)  # ... and metric → passes
    for r in records:
        if r.scored:
            trials[(r.agent, r.scenario_id)] += 1
            for metric, passed in passes.items():
                by_metric[(r.agent, r.scenario_id, metric)].append(bool(passed(r)))
    kmax = min(trials.values(), default=0)
    if kmax < 2:
        return [], []
    ks = list(range(1, kmax + 1))
    header = ["agent", "estimator", *(f"{metric} k={k} %" for metric in passes for k in ks)]
    rows = []
    for agent in sorted({a for a, _ in trials}):
        for name, estimator in ESTIMATORS.items():
            row = [agent, name]
            for metric in passes:
                per = [
                    {k: estimator(len(v), sum(v), k) for k in range(1, len(v) + 1)}
                    for (a, _, m), v in sorted(by_metric.items())
                    if a == agent and m == metric
                ]
                row += ["—" if x is None else f"{100 * x:.1f}" for x in macro_curve(per, ks)]
            rows.append(row)
    return header, rows


def pass_k_markdown(title: str, records: Sequence[EpisodeRecord], passes: Mapping[str, Pass]) -> list[str]:
    """``## <title>: pass@k and pass^k``, the note and :func:`pass_k_table` (nothing when a
    scenario ran once)."""
    header, rows = pass_k_table(records, passes)
    if not rows:
        return []
    return ["", f"## {title}: pass@k and pass^k", "", PASSK_NOTE, "", md_table(header, rows, escape=True), ""]


def pass_k_html(title: str, records: Sequence[EpisodeRecord], passes: Mapping[str, Pass]) -> list[str]:
    """:func:`pass_k_markdown` as HTML."""
    header, rows = pass_k_table(records, passes)
    if not rows:
        return []
    return [
        f"<h2>{html.escape(title)}: pass@k and pass^k</h2>",
        f"<p class='muted'>{html.escape(PASSK_NOTE)}</p>"
        + html_table(header, [[html.escape(c) for c in row] for row in rows]),
    ]
