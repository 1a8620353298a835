"""Aggregation of episode records into the paper's numbers.

Per (agent, scenario): mean ± standard error over trials, pass@k and pass^k. Per agent: the macro average
over scenarios (standard error of the scenario means, as ITBench's aggregator), MTTD / MTTR over
successful runs only (∞ when none), and the same broken down by complexity bucket, fault category
and observability condition (traces on/off). Episodes ended by the environment or the harness are
excluded and counted as ``bad_runs``; no-fault controls are excluded from mitigation rates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..evaluation.stats import finite_mean, finite_stderr, mean, pass_at_k, pass_hat_k, stderr

if TYPE_CHECKING:
    from ..harness.records import EpisodeRecord


class Stat(BaseModel):
    mean: float
    stderr: float
    n: int

    @classmethod
    def of(cls, xs: Sequence[float]) -> Stat:
        return cls(mean=mean(xs), stderr=stderr(xs), n=len(xs))

    @classmethod
    def times(cls, xs: Sequence[float | None]) -> Stat:
        vals = [x for x in xs if x is not None and math.isfinite(x)]
        return cls(mean=finite_mean(xs), stderr=finite_stderr(xs), n=len(vals))


class ScenarioResult(BaseModel):
    scenario_id: str
    agent: str
    trials: int
    bad_runs: int = 0
    category: str = ""
    bucket: str = ""
    complexity: float = 0.0
    control: bool = False
    condition: str = "traces on"
    diagnosis: Stat
    diagnosis_strict: Stat | None = None
    """ITBench-Lite's strict pass (nothing named besides the root causes): ``DiagnosisScore.strict``."""
    mitigation: Stat | None = None
    ntam_fl: Stat
    ntam_fpc: Stat
    entity_f1: Stat
    chain_f1: Stat
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    mitigation_pass_at_k: dict[int, float] = Field(default_factory=dict)
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    """Diagnosis pass^k (every one of k trials right; ``evaluation/stats.pass_hat_k``) for k = 1..trials."""
    mitigation_pass_hat_k: dict[int, float] = Field(default_factory=dict)
    mttd_wall: Stat
    mttd_twin: Stat
    mttr_wall: Stat
    mttr_twin: Stat
    submitted: float = 0.0
    terminations: dict[str, int] = Field(default_factory=dict)
    tokens: float = 0.0
    cost_usd: float = 0.0


class GroupResult(BaseModel):
    """A macro average over the scenarios of one group (an agent overall, a bucket, a category...)."""

    agent: str
    group: str
    scenarios: int
    episodes: int
    bad_runs: int
    diagnosis: Stat
    mitigation: Stat | None
    diagnosis_strict: Stat | None = None
    ntam_fl: Stat
    ntam_fpc: Stat
    entity_f1: Stat
    chain_f1: Stat
    pass_at_1: float
    mttd_wall: Stat
    mttd_twin: Stat
    mttr_wall: Stat
    mttr_twin: Stat
    submitted: float
    tokens: float
    cost_usd: float


class Summary(BaseModel):
    scenarios: list[ScenarioResult]
    overall: list[GroupResult]
    by_bucket: list[GroupResult]
    by_category: list[GroupResult]
    by_condition: list[GroupResult]
    faults_only: list[GroupResult] = Field(default_factory=list)
    """The headline rows without the no-fault controls (the paper's denominator: every scenario has a
    fault); empty when the records have no control."""


def condition_of(masked: Iterable[str]) -> str:
    return "traces off" if "traces" in set(masked) else "traces on"


def _pass_at(n: int, c: int) -> dict[int, float]:
    return {k: pass_at_k(n, c, k) for k in range(1, n + 1)}


def _pass_hat(n: int, c: int) -> dict[int, float]:
    return {k: pass_hat_k(n, c, k) for k in range(1, n + 1)}


def _episode_stats(scored: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Timing, submission rate and usage over scored episodes (shared by scenario and group results)."""
    tokens = [float(r.usage.input_tokens + r.usage.output_tokens) for r in scored]
    return {
        "mttd_wall": Stat.times([r.timing.mttd_wall_s for r in scored if not r.control]),
        "mttd_twin": Stat.times([r.timing.mttd_twin_s for r in scored if not r.control]),
        "mttr_wall": Stat.times([r.timing.mttr_wall_s for r in scored if not r.control]),
        "mttr_twin": Stat.times([r.timing.mttr_twin_s for r in scored if not r.control]),
        "submitted": mean([1.0 if r.termination == "submitted" else 0.0 for r in scored]) if scored else 0.0,
        "tokens": mean(tokens) if scored else 0.0,
        "cost_usd": mean([r.usage.cost_usd for r in scored]) if scored else 0.0,
    }


def scenario_result(records: Sequence[EpisodeRecord]) -> ScenarioResult:
    first = records[0]
    scored = [r for r in records if r.scored]
    diag = [1.0 if (r.diagnosis and r.diagnosis.correct) else 0.0 for r in scored]
    strict = [1.0 if (r.diagnosis and r.diagnosis.strict()) else 0.0 for r in scored]
    mit_recs = [r for r in scored if r.mitigation is not None and r.mitigation.applicable]
    mit = [1.0 if r.mitigation and r.mitigation.passed else 0.0 for r in mit_recs]
    applicable = not first.control
    terms: dict[str, int] = defaultdict(int)
    for r in records:
        terms[r.termination] += 1

    def d(attr: str) -> list[float]:
        return [float(getattr(r.diagnosis, attr)) if r.diagnosis else 0.0 for r in scored]

    n = len(scored)
    return ScenarioResult(
        scenario_id=first.scenario_id,
        agent=first.agent,
        trials=n,
        bad_runs=len(records) - n,
        category=first.category,
        bucket=first.bucket,
        complexity=first.complexity,
        control=first.control,
        condition=condition_of(first.masked),
        diagnosis=Stat.of(diag),
        diagnosis_strict=Stat.of(strict),
        mitigation=Stat.of(mit) if applicable else None,
        ntam_fl=Stat.of(d("ntam_fl")),
        ntam_fpc=Stat.of(d("ntam_fpc")),
        entity_f1=Stat.of(d("f1")),
        chain_f1=Stat.of(d("chain_f1")),
        pass_at_k=_pass_at(n, int(sum(diag))) if n else {},
        mitigation_pass_at_k=_pass_at(len(mit), int(sum(mit))) if mit and applicable else {},
        pass_hat_k=_pass_hat(n, int(sum(diag))) if n else {},
        mitigation_pass_hat_k=_pass_hat(len(mit), int(sum(mit))) if mit and applicable else {},
        terminations=dict(terms),
        **_episode_stats(scored),
    )


def _macro(
    agent: str, group: str, results: Sequence[ScenarioResult], records: Sequence[EpisodeRecord]
) -> GroupResult:
    rs = [r for r in results if r.trials > 0]

    def means(get: Callable[[ScenarioResult], Stat | None]) -> Stat:
        vals = [s.mean for r in rs if (s := get(r)) is not None and not math.isnan(s.mean)]
        return Stat.of(vals)

    scored = [r for r in records if r.scored]
    mit = means(lambda r: r.mitigation)
    return GroupResult(
        agent=agent,
        group=group,
        scenarios=len(rs),
        episodes=len(scored),
        bad_runs=len(records) - len(scored),
        diagnosis=means(lambda r: r.diagnosis),
        diagnosis_strict=means(lambda r: r.diagnosis_strict),
        mitigation=mit if mit.n else None,
        ntam_fl=means(lambda r: r.ntam_fl),
        ntam_fpc=means(lambda r: r.ntam_fpc),
        entity_f1=means(lambda r: r.entity_f1),
        chain_f1=means(lambda r: r.chain_f1),
        pass_at_1=mean([r.pass_at_k.get(1, 0.0) for r in rs]) if rs else math.nan,
        **_episode_stats(scored),
    )


_ORDER = {"easy": 0, "medium": 1, "hard": 2, "control": 3, "traces on": 0, "traces off": 1}


def _group_order(name: str) -> tuple[int, str]:
    return (_ORDER.get(name, 5), name)


def summarize(records: Sequence[EpisodeRecord]) -> Summary:
    cells: dict[tuple[str, str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        cells[(r.agent, r.scenario_id, condition_of(r.masked))].append(r)
    results = {k: scenario_result(v) for k, v in sorted(cells.items())}
    agents = sorted({k[0] for k in cells})

    def grouped(key: Callable[[ScenarioResult], str], faults_only: bool = False) -> list[GroupResult]:
        out = []
        for agent in agents:
            groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
            for k, res in results.items():
                if k[0] == agent and not (faults_only and res.control):
                    groups[key(res)].append(k)
            for g in sorted(groups, key=_group_order):
                ks = groups[g]
                out.append(_macro(agent, g, [results[k] for k in ks], [r for k in ks for r in cells[k]]))
        return out

    return Summary(
        scenarios=list(results.values()),
        overall=grouped(lambda r: r.condition),  # a headline row never pools traces on and off
        by_bucket=grouped(lambda r: r.bucket),
        by_category=grouped(lambda r: r.category),
        by_condition=grouped(lambda r: r.condition),
        faults_only=grouped(lambda r: r.condition, faults_only=True)
        if any(r.control for r in results.values())
        else [],
    )
