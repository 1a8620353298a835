"""``itbench compare RUN_A RUN_B``: two runs (or two agents of one run) side by side, paired by scenario.

Each scenario both sides ran is one pair: its score on each side is the mean over that side's scored
trials (unscored episodes — environment and harness errors — are left out, as in the report). Per
metric the comparison gives both means over the paired scenarios, their difference (B − A), on how
many scenarios B did better, worse or the same, and a two-sided exact **sign test** over the
scenarios that differ: with one trial and pass/fail scores this is McNemar's exact test; it assumes
nothing about how the differences are distributed. Metrics: diagnosis and mitigation (where
mitigation applies: no-fault controls have none), and every named score a persona records (CISO's
``strict``, FinOps' ``pinpointed`` or proximity values...); and for a pass/fail metric that every
paired scenario ran at least twice on both sides, ``<metric> pass^k`` (τ-bench's reliability: the
chance that k trials all pass, k the fewest trials of a pair), paired and tested the same way.

A scenario one side did not run is listed, never silently dropped from a mean of the other.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..evaluation.stats import pass_hat_k
from ..harness.records import EpisodeRecord


class CompareError(ValueError):
    """Nothing to compare (say which agents there are)."""


@dataclass
class MetricComparison:
    metric: str
    scenarios: int
    """Scenarios both sides have a value of this metric for."""
    mean_a: float
    mean_b: float
    b_better: int
    a_better: int
    ties: int
    p_value: float
    """Two-sided exact sign test over the scenarios that differ (1.0 when none do)."""
    differing: list[tuple[str, float, float]] = field(default_factory=list)
    """(scenario, A, B) where the two differ."""

    @property
    def difference(self) -> float:
        return self.mean_b - self.mean_a


@dataclass
class Comparison:
    label_a: str
    label_b: str
    metrics: list[MetricComparison]
    only_a: list[str]
    only_b: list[str]


def sign_test(b_better: int, a_better: int) -> float:
    """Two-sided exact binomial test of ``b_better`` against ``a_better`` at p = 1/2."""
    n = b_better + a_better
    if n == 0:
        return 1.0
    k = min(b_better, a_better)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def outcomes(rec: EpisodeRecord) -> dict[str, float]:
    """The metrics of one scored episode."""
    out: dict[str, float] = {}
    if rec.diagnosis is not None and (rec.persona == "sre" or rec.mitigation is not None):
        out["diagnosis"] = 1.0 if rec.diagnosis.correct else 0.0
    if rec.mitigation is not None and rec.mitigation.applicable:
        out["mitigation"] = 1.0 if rec.mitigation.passed else 0.0
    for name, score in rec.scores.items():
        if math.isfinite(score.value):
            out[name] = float(score.value)
    return out


def agents_of(records: Sequence[EpisodeRecord]) -> list[str]:
    return sorted({r.agent for r in records})


def pick_agent(records: Sequence[EpisodeRecord], wanted: str | None, side: str) -> str:
    """The agent to compare on one side: ``wanted``, or the run's only agent."""
    agents = agents_of(records)
    if wanted is not None:
        if wanted not in agents:
            raise CompareError(f"run {side} has no agent {wanted!r} (it has: {', '.join(agents) or 'none'})")
        return wanted
    if len(agents) != 1:
        raise CompareError(
            f"run {side} has {len(agents)} agents ({', '.join(agents) or 'none'}): "
            f"name the one to compare with --agent-{side.lower()}"
        )
    return agents[0]


def _per_scenario(records: Sequence[EpisodeRecord], agent: str) -> dict[str, dict[str, list[float]]]:
    """scenario → metric → the agent's value on each scored trial."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.agent != agent or not r.scored:
            continue
        for metric, v in outcomes(r).items():
            values[r.scenario_id][metric].append(v)
    return values


def _comparison(metric: str, pairs: list[tuple[str, float, float]]) -> MetricComparison:
    better = sum(1 for _, x, y in pairs if y > x)
    worse = sum(1 for _, x, y in pairs if y < x)
    return MetricComparison(
        metric=metric,
        scenarios=len(pairs),
        mean_a=sum(x for _, x, _ in pairs) / len(pairs),
        mean_b=sum(y for _, _, y in pairs) / len(pairs),
        b_better=better,
        a_better=worse,
        ties=len(pairs) - better - worse,
        p_value=sign_test(better, worse),
        differing=[(sid, x, y) for sid, x, y in pairs if x != y],
    )


def _reliability(metric: str, trials: list[tuple[str, list[float], list[float]]]) -> MetricComparison | None:
    """``<metric> pass^k``: for a pass/fail metric every paired scenario ran at least twice on both
    sides, each side's chance that k of its trials all pass (k: the fewest trials of a pair), so
    that an agent right every time is told from one right now and then at the same mean."""
    if any(v not in (0.0, 1.0) for _, xs, ys in trials for v in (*xs, *ys)):
        return None
    k = min(min(len(xs), len(ys)) for _, xs, ys in trials)
    if k < 2:
        return None
    pairs = [
        (sid, pass_hat_k(len(xs), int(sum(xs)), k), pass_hat_k(len(ys), int(sum(ys)), k))
        for sid, xs, ys in trials
    ]
    return _comparison(f"{metric} pass^{k}", pairs)


def compare(
    records_a: Sequence[EpisodeRecord],
    records_b: Sequence[EpisodeRecord],
    agent_a: str | None = None,
    agent_b: str | None = None,
) -> Comparison:
    label_a, label_b = pick_agent(records_a, agent_a, "A"), pick_agent(records_b, agent_b, "B")
    a, b = _per_scenario(records_a, label_a), _per_scenario(records_b, label_b)
    paired = sorted(set(a) & set(b))
    if not paired:
        raise CompareError(f"no scenario has scored episodes of {label_a} (A) and of {label_b} (B)")
    names: list[str] = []
    for sid in paired:
        for m in [*a[sid], *b[sid]]:
            if m not in names:
                names.append(m)
    metrics = []
    for m in names:
        trials = [(sid, a[sid][m], b[sid][m]) for sid in paired if m in a[sid] and m in b[sid]]
        if not trials:
            continue
        metrics.append(
            _comparison(m, [(sid, sum(xs) / len(xs), sum(ys) / len(ys)) for sid, xs, ys in trials])
        )
        reliability = _reliability(m, trials)
        if reliability is not None:
            metrics.append(reliability)
    return Comparison(label_a, label_b, metrics, sorted(set(a) - set(b)), sorted(set(b) - set(a)))
