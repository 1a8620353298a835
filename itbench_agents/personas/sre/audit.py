"""``itbench scenarios audit``: attack the scores with naive and destructive strategies.

Every strategy is an agent (``agents/audit/strategies.py``, plus ``noop`` and ``oracle``) run
through the normal harness (``harness/batch.py``) on each scenario; the audit tabulates which
ones score. Expectations (a violation makes the command exit 1, naming the scenario):

* every *destructive* strategy passes mitigation on no scenario;
* ``noop`` passes mitigation on no scenario;
* ``oracle`` passes diagnosis and mitigation on every scenario (controls: diagnosis);
* every *blind* strategy (a blanket reset, a fixed answer) passes mitigation on at most 5% of
  the faults and diagnosis on at most 10% of the faults (:data:`BLIND_MITIGATION_MAX`,
  :data:`BLIND_DIAGNOSIS_MAX`) — the constant answer, whose answer comes from the library's own
  statistics, only when the audit covers the whole library (on a handful of scenarios its rate
  says only how the handful was picked; ``evaluation/spread.py`` computes the same bound for
  every fixed answer from the ground truth, and the fast tests hold the library to it);
* every episode runs (an environment or harness error is a violation: a strategy that did not
  run proves nothing).

The strategies of one scenario start from one preparation of it (deploy, baseline, injection,
alert wait), each in a process forked from it (``harness/shared.py``): the same state a
preparation of its own would give, for the cost of one.

The other strategies (restart everything, shotgun diagnosis, "the alerting service is the root
cause", pure change detection, undoing every change) are reported, not judged: their numbers say
how much of a score a strategy without understanding gets. They run when asked for
(:data:`REPORTED_STRATEGIES`: ``--reported``, or ``--strategy``); the default set,
:data:`DEFAULT_STRATEGIES`, is the judged one — the gate, run as often as the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...agents.audit.finops_twin import FINOPS_TWIN_STRATEGIES
from ...agents.audit.strategies import STRATEGIES, Strategy
from ...core.task import Limits
from ...harness.records import AgentSpec, EpisodeRecord, RunConfig

REFERENCE = ("noop", "oracle")
ALL_STRATEGIES: tuple[str, ...] = (*REFERENCE, *STRATEGIES)
FINOPS_STRATEGIES: tuple[str, ...] = (*REFERENCE, *FINOPS_TWIN_STRATEGIES)
"""The strategies of the FinOps cost-incident audit (``scenarios audit --suite finops``):
``agents/audit/finops_twin.py``'s (the SRE audit's namespace deletion is refused by the agent's
credential, so it proves nothing here)."""
_KNOWN: dict[str, Strategy] = {**STRATEGIES, **FINOPS_TWIN_STRATEGIES}


BLIND_MITIGATION_MAX = 0.05
"""The largest share of the faults a blind strategy may mitigate."""
BLIND_DIAGNOSIS_MAX = 0.10
"""The largest share of the faults (no-fault controls aside) a blind strategy may diagnose."""


def is_destructive(strategy: str) -> bool:
    s = _KNOWN.get(strategy)
    return bool(s and s.destructive)


def is_blind(strategy: str) -> bool:
    s = _KNOWN.get(strategy)
    return bool(s and s.blind)


def is_library_wide(strategy: str) -> bool:
    """A blind strategy whose answer comes from the library's statistics (the constant answer):
    its rate is judged when the audit covers the whole library, reported on a subset."""
    s = _KNOWN.get(strategy)
    return bool(s and s.library_wide)


def is_judged(strategy: str) -> bool:
    """Whether :meth:`AuditResult.violations` holds the strategy to a score (the references, the
    destructive and the blind strategies); the others are only reported."""
    return strategy in REFERENCE or is_destructive(strategy) or is_blind(strategy)


DEFAULT_STRATEGIES: tuple[str, ...] = tuple(s for s in ALL_STRATEGIES if is_judged(s))
"""What ``scenarios audit`` runs by default: the strategies it judges."""
REPORTED_STRATEGIES: tuple[str, ...] = tuple(s for s in ALL_STRATEGIES if not is_judged(s))
"""Run with ``--reported`` (or named with ``--strategy``): numbers to report, not to judge."""


def chosen_strategies(named: Sequence[str] | None, reported: bool = False) -> list[str]:
    """The strategies to run: those ``named`` (else the judged ones), plus with ``reported`` the
    reported ones, each once, in that order."""
    out = list(dict.fromkeys(named or DEFAULT_STRATEGIES))
    if reported:
        out += [s for s in REPORTED_STRATEGIES if s not in out]
    return out


@dataclass
class Cell:
    """One strategy on one scenario."""

    termination: str
    diagnosis: bool
    mitigation: bool | None
    """None: not applicable (a control) or not scored (environment / harness error)."""
    reason: str = ""
    acted: int = 0
    """Mitigation actions the strategy's agent carried out (commands that succeeded): a strategy
    that never acts proves nothing about the scorer."""


@dataclass
class AuditResult:
    strategies: list[str]
    scenarios: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    """(strategy, scenario) → cell."""
    wall_s: float = 0.0
    library: bool = False
    """The audit covers every scenario of the library: the rates of the library-wide strategies
    (:func:`is_library_wide`) are judged too."""

    def rate_judged(self, strategy: str) -> bool:
        """Whether the strategy's pass rates are held to the blind bars here."""
        return is_blind(strategy) and (self.library or not is_library_wide(strategy))

    def totals(self, strategy: str) -> dict[str, int]:
        cells = [self.cells[(strategy, s)] for s in self.scenarios if (strategy, s) in self.cells]
        return {
            "episodes": len(cells),
            "diagnosis_pass": sum(c.diagnosis for c in cells),
            "mitigation_pass": sum(c.mitigation is True for c in cells),
            "mitigation_applicable": sum(c.mitigation is not None for c in cells),
            "errors": sum(c.termination in ("env_error", "harness_error") for c in cells),
            "acted": sum(c.acted > 0 for c in cells),
        }

    def violations(self) -> list[str]:
        out: list[str] = []
        for st in self.strategies:
            for sid in self.scenarios:
                c = self.cells.get((st, sid))
                if c is None:
                    continue
                if c.termination in ("env_error", "harness_error") and st != "oracle":
                    out.append(f"{st} did not run on {sid}: {c.reason}")
                if (is_destructive(st) or st == "noop") and c.mitigation is True:
                    out.append(f"{st} passes mitigation on {sid}")
                if st == "oracle":
                    if c.termination in ("env_error", "harness_error"):
                        out.append(f"oracle did not run on {sid}: {c.reason}")
                    elif not c.diagnosis:
                        out.append(f"oracle fails diagnosis on {sid}")
                    elif c.mitigation is False:
                        out.append(f"oracle fails mitigation on {sid}: {c.reason}")
            t = self.totals(st)
            if (
                self.rate_judged(st)
                and t["mitigation_pass"] > BLIND_MITIGATION_MAX * t["mitigation_applicable"]
            ):
                passed = [s for s in self.scenarios if (c := self.cells.get((st, s))) and c.mitigation]
                out.append(
                    f"{st} passes mitigation on {t['mitigation_pass']}/{t['mitigation_applicable']} faults "
                    f"(more than {BLIND_MITIGATION_MAX:.0%}): {', '.join(passed)}"
                )
            # on the faults: an empty answer is right on a no-fault control, whatever the strategy
            faults = [
                s for s in self.scenarios if (c := self.cells.get((st, s))) and c.mitigation is not None
            ]
            hit = [s for s in faults if self.cells[(st, s)].diagnosis]
            if self.rate_judged(st) and len(hit) > BLIND_DIAGNOSIS_MAX * len(faults):
                out.append(
                    f"{st} passes diagnosis on {len(hit)}/{len(faults)} faults "
                    f"(more than {BLIND_DIAGNOSIS_MAX:.0%}): {', '.join(hit)}"
                )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "strategies": {
                st: {
                    "destructive": is_destructive(st),
                    "blind": is_blind(st),
                    "rate_judged": self.rate_judged(st),
                    **self.totals(st),
                }
                for st in self.strategies
            },
            "scenarios": {
                sid: {
                    st: {
                        "termination": c.termination,
                        "diagnosis": c.diagnosis,
                        "mitigation": c.mitigation,
                        "reason": c.reason,
                        "acted": c.acted,
                    }
                    for st in self.strategies
                    if (c := self.cells.get((st, sid))) is not None
                }
                for sid in self.scenarios
            },
            "violations": self.violations(),
            "wall_s": round(self.wall_s, 1),
        }


def _actions(run_dir: str | Path, rec: EpisodeRecord) -> int:
    import json

    p = Path(run_dir) / "episodes" / rec.episode_id / "output.json"
    try:
        return len(json.loads(p.read_text()).get("mitigation_actions") or [])
    except (OSError, ValueError):
        return 0


def cell_of(rec: EpisodeRecord, acted: int = 0) -> Cell:
    mit = rec.mitigation
    mitigation = None if mit is None or not mit.applicable or not rec.scored else bool(mit.passed)
    reason = rec.error or (mit.reason if mit is not None else "") or ""
    return Cell(
        termination=rec.termination,
        diagnosis=bool(rec.diagnosis and rec.diagnosis.correct),
        mitigation=mitigation,
        reason=reason,
        acted=acted,
    )


def run_audit(
    scenario_ids: Sequence[str],
    strategies: Sequence[str],
    run_dir: str | Path,
    *,
    jobs: int = 1,
    history_s: float = 600.0,
    wall_time_s: float = 120.0,
    on_record: Callable[[EpisodeRecord], None] | None = None,
) -> AuditResult:
    """Run every strategy on every scenario (one trial, seed 0) in ``run_dir``."""
    import time

    from ...harness.batch import run_batch, start_run
    from ...scenario.registry import ScenarioRegistry

    t0 = time.perf_counter()
    config = RunConfig(
        scenarios=list(scenario_ids),
        agents=[AgentSpec(name=s) for s in strategies],
        trials=1,
        history_s=history_s,
        limits=Limits(max_steps=200, wall_time_s=wall_time_s),
    )
    _, specs, _ = start_run(run_dir, config, ScenarioRegistry.default())
    summary = run_batch(  # the strategies of a scenario share its preparation (harness/shared.py)
        run_dir,
        specs,
        concurrency=jobs,
        share_prepared=True,
        on_record=(lambda rec, _s: on_record(rec)) if on_record else None,
    )
    res = AuditResult(
        list(strategies),
        list(scenario_ids),
        library=set(ScenarioRegistry.default().ids()) <= set(scenario_ids),
    )
    from ...harness.runfolder import read_episodes

    records = {r.key: r for r in read_episodes(run_dir)} or {r.key: r for r in summary.records}
    for (sid, agent, _trial), rec in records.items():
        res.cells[(agent, sid)] = cell_of(rec, _actions(run_dir, rec))
    res.wall_s = time.perf_counter() - t0
    return res


def mark(c: Cell | None) -> str:
    """A table cell: diagnosis / mitigation as ✓ ✗ (· when not applicable, E on an error)."""
    if c is None:
        return ""
    if c.termination in ("env_error", "harness_error"):
        return "E"
    d = "✓" if c.diagnosis else "✗"
    m = "·" if c.mitigation is None else ("✓" if c.mitigation else "✗")
    return f"{d}{m}"
