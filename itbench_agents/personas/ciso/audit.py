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
from ...agents.audit.ciso_rego import REGO_STRATEGIES, RHEL_ONLY, rego_answer_of
from ...harness.records import AgentSpec, EpisodeRecord, RunConfig
from .host_score import collect_host
from .rego_score import Collected, RegoScore, collect, decide
from .score import score_policies
from .spec import CisoScenario

REFERENCE = ("noop", "oracle")
ALL_STRATEGIES = (*STRATEGIES, *REGO_STRATEGIES)


def applies_to(strategy: str, scenario: CisoScenario) -> bool:
    """Reference agents everywhere; Kyverno strategies on the Kyverno classes (update-only ones on
    ``kyverno-update``); Rego strategies on ``k8s-opa`` and ``rhel-opa`` (``rhel-remediate`` on
    ``rhel-opa`` only)."""
    if strategy in REFERENCE:
        return True
    if strategy in RHEL_ONLY:
        return scenario.task_class == "rhel-opa"
    if strategy in REGO_STRATEGIES:
        return scenario.task_class in ("k8s-opa", "rhel-opa")
    kyverno = scenario.task_class in ("kyverno", "kyverno-update")
    return kyverno and applies(strategy, scenario.task_class == "kyverno-update")


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
    scenarios: Sequence[CisoScenario], strategies: Sequence[str] = ALL_STRATEGIES, *, seed: int = 0
) -> CisoAudit:
    out = CisoAudit()
    for s in scenarios:
        collected: dict[tuple[str, str], Collected] = {}  # strategies that fetch alike run the script once
        for name in strategies:
            if not applies_to(name, s):
                continue
            if name in REGO_STRATEGIES:
                script, policy = rego_answer_of(
                    name, s.goal("/work/kubeconfig", "/work", "/work/inventory.ini")
                )
                runs = []
                for variant in ("violating", "compliant"):
                    key = (variant, script)
                    if key not in collected and s.task_class == "rhel-opa":
                        collected[key] = collect_host(s, variant, script)
                    elif key not in collected:
                        collected[key] = collect(s, variant, script, seed=seed)
                    runs.append(decide(collected[key], policy))
                rego = RegoScore(True, "", runs[0], runs[1])
                out.add(name, s.id, rego.violation_detection, rego.strict)
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
    """The strategies (and noop, oracle when named) as agents through the harness, one run per set
    of strategies that apply to the same scenarios (:func:`applies_to`)."""
    from ...harness.batch import run_batch, start_run
    from ...harness.catalogue import Catalogue

    catalogue = Catalogue.default()
    scenarios = [s for s in (catalogue.get(i) for i in scenario_ids) if isinstance(s, CisoScenario)]
    groups: dict[tuple[str, ...], list[str]] = {}  # the scenarios a strategy applies to → strategies
    for name in strategies:
        where = tuple(s.id for s in scenarios if applies_to(name, s))
        if where:
            groups.setdefault(where, []).append(name)
    out = CisoAudit()
    for i, (where, names) in enumerate(groups.items()):
        sub = f"group-{i}"
        config = RunConfig(
            scenarios=list(where), agents=[AgentSpec(name=agent_name(n), label=n) for n in names]
        )
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
