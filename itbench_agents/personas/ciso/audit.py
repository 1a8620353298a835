"""``itbench scenarios audit --suite ciso``: blind strategies (``agents/audit/ciso.py``) on CISO
scenarios, through the harness like any agent, judged on the strict column.

The verdict fails when a blind strategy scores strict anywhere, when noop scores anything, or when the
oracle misses anywhere. The paper's pass (``detected``) is printed beside it: deny-everything earns it
on every scenario, which is why the strict column exists.

:func:`audit_direct` scores the same strategies' policies without episodes (what the agent would
leave, computed from the scenario's workloads and deployed policies, then executed by the scorer):
the tests use it to audit the whole library within the suite's time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...agents.audit.ciso import STRATEGIES, View, applies, final_policies
from ...harness.records import AgentSpec, EpisodeRecord, RunConfig
from .score import score_policies
from .spec import CisoScenario

REFERENCE = ("noop", "oracle")


def agent_name(strategy: str) -> str:
    return strategy if strategy in REFERENCE else f"audit-ciso-{strategy}"


@dataclass
class Tally:
    applicable: list[str] = field(default_factory=list)
    detected: list[str] = field(default_factory=list)
    strict: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class CisoAudit:
    tallies: dict[str, Tally] = field(default_factory=dict)

    def add(
        self, strategy: str, scenario_id: str, detected: bool, strict: bool, error: str | None = None
    ) -> None:
        t = self.tallies.setdefault(strategy, Tally())
        t.applicable.append(scenario_id)
        if error:
            t.errors.append(f"{scenario_id}: {error}")
        if detected:
            t.detected.append(scenario_id)
        if strict:
            t.strict.append(scenario_id)

    def problems(self) -> list[str]:
        out = []
        for name, t in self.tallies.items():
            if name == "oracle":
                missed = sorted(set(t.applicable) - set(t.strict))
                if missed:
                    out.append(f"oracle misses the strict column on {', '.join(missed)}")
            elif name == "noop":
                if t.detected or t.strict:
                    out.append(f"noop scores on {', '.join(sorted(set(t.detected) | set(t.strict)))}")
            elif t.strict:
                out.append(f"blind strategy {name} scores strict on {', '.join(sorted(t.strict))}")
            out += [f"{name}: {e}" for e in t.errors]
        return out

    @property
    def ok(self) -> bool:
        return not self.problems()


def scenario_view(scenario: CisoScenario) -> View:
    """What an agent sees in the scenario's cluster: its goal, its workloads, the deployed policies."""
    workloads = [
        {**d, "metadata": {**(d.get("metadata") or {}), "namespace": scenario.namespace}}
        for d in scenario.violating
        if (d["apiVersion"], d["kind"], scenario.namespace, d["metadata"]["name"]) in scenario.targets()
    ]
    return View(goal=scenario.goal("/work/kubeconfig"), workloads=workloads, deployed=list(scenario.existing))


def audit_direct(
    scenarios: Sequence[CisoScenario], strategies: Sequence[str] = tuple(STRATEGIES), *, seed: int = 0
) -> CisoAudit:
    out = CisoAudit()
    for s in scenarios:
        update = s.task_class == "kyverno-update"
        for name in strategies:
            if not applies(name, update):
                continue
            score = score_policies(s, final_policies(name, scenario_view(s)), seed=seed)
            out.add(name, s.id, score.detected, score.strict, score.refused or None)
    return out


def run_ciso_audit(
    scenario_ids: Sequence[str],
    strategies: Sequence[str],
    folder: str | Path,
    *,
    jobs: int = 1,
    on_record: Callable[[EpisodeRecord], None] | None = None,
) -> CisoAudit:
    """The strategies (and noop, oracle when named) as agents through the harness: one run for the
    strategies that apply to every scenario, one for those that apply to policy updates only."""
    from ...harness.batch import run_batch, start_run
    from ...harness.catalogue import Catalogue

    catalogue = Catalogue.default()
    scenarios = [catalogue.get(i) for i in scenario_ids]
    update_ids = [s.id for s in scenarios if isinstance(s, CisoScenario) and s.task_class == "kyverno-update"]
    everywhere = [s for s in strategies if s in REFERENCE or STRATEGIES[s][1]]
    updates_only = [s for s in strategies if s not in everywhere]
    out = CisoAudit()
    for sub, names, ids in (("all", everywhere, list(scenario_ids)), ("updates", updates_only, update_ids)):
        if not names or not ids:
            continue
        config = RunConfig(scenarios=ids, agents=[AgentSpec(name=agent_name(n), label=n) for n in names])
        run_dir = Path(folder) / sub
        _, specs, _ = start_run(run_dir, config, catalogue)
        summary = run_batch(
            run_dir,
            specs,
            concurrency=jobs,
            on_record=(lambda rec, _s: on_record(rec)) if on_record else None,
        )
        for rec in summary.records:
            strict = rec.scores.get("strict")
            detected = rec.scores.get("detected")
            error = rec.error if not rec.scored else None
            out.add(
                rec.agent,
                rec.scenario_id,
                bool(detected and detected.passed),
                bool(strict and strict.passed),
                error,
            )
    return out
