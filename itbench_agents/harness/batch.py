"""Batches: scenarios × trials × agents, bounded process concurrency, live progress, resume.

The parent process is the only writer of ``episodes.jsonl``; an executor (``executors.py``: worker
processes when ``concurrency > 1``, the parent itself otherwise) runs whole episodes and returns
their records.

Interrupts: Ctrl-C (SIGINT) or SIGTERM stops the batch. No new episode starts; the episodes in
flight end where they are (their environments torn down: the exception runs their clean-up, and
worker processes that do not end within :data:`STOP_GRACE_S` are killed) and are *not* recorded,
so a resumed run (the same command and run folder, or ``itbench run --resume``) runs them again.
:func:`run_batch` then raises :class:`BatchInterrupted` with what it recorded before.
"""

from __future__ import annotations

import datetime as _dt
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .catalogue import ScenarioLookup
from .episode import EpisodeSpec, _utc, trial_seed
from .executors import Executor, default_executor
from .records import EpisodeRecord, RunConfig, RunManifest
from .runfolder import EpisodeLog, git_revision, open_run, package_versions, read_episodes
from .shared import groups
from .units import STOP_GRACE_S, STOPPING, Interrupted, interrupt_on_signals

__all__ = [
    "STOP_GRACE_S",
    "BatchInterrupted",
    "BatchSummary",
    "Interrupted",
    "done_keys",
    "interrupt_on_signals",
    "plan",
    "run_batch",
    "start_run",
]


def plan(config: RunConfig, registry: ScenarioLookup, run_id: str, run_dir: str | Path) -> list[EpisodeSpec]:
    specs = []
    for agent in config.agents:
        for sid in config.scenarios:
            scenario = registry.get(sid)
            for trial in range(config.trials):
                specs.append(
                    EpisodeSpec(
                        run_id=run_id,
                        run_dir=str(run_dir),
                        scenario=scenario,
                        agent=agent,
                        trial=trial,
                        seed=trial_seed(config.base_seed, scenario.id, trial),
                        masked=list(config.masked),
                        limits=config.limits,
                        history_s=config.history_s,
                        settle_s=config.settle_s,
                        environment=config.environment,
                        backend=config.backend,
                        churn=config.churn,
                        before_agent=config.before_agent,
                    )
                )
    return specs


def new_run_id() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def new_manifest(run_id: str, config: RunConfig, planned: int) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        created_at=_utc(),
        config=config,
        versions=package_versions(),
        git_revision=git_revision(),
        episodes_planned=planned,
        command=list(sys.argv),
    )


@dataclass
class BatchSummary:
    planned: int = 0
    skipped: int = 0
    ran: int = 0
    diagnosis_pass: int = 0
    mitigation_pass: int = 0
    mitigation_applicable: int = 0
    errors: int = 0
    compliance_pass: int = 0
    """CISO episodes whose ``strict`` score passed (the violation detected, the compliant variant clean)."""
    compliance_scored: int = 0
    records: list[EpisodeRecord] = field(default_factory=list)
    stopped_early: bool = False

    @property
    def sre_ran(self) -> int:
        """Episodes scored as SRE ones are (diagnosis and mitigation): SRE's, and FinOps' on the twin."""
        return sum(
            1
            for r in self.records
            if r.persona == "sre" or (r.persona == "finops" and r.category != "anomaly")
        )

    def per_agent(self) -> dict[str, BatchSummary]:
        """The summary of each agent's episodes (by display label, in the order they finished)."""
        out: dict[str, BatchSummary] = {}
        for r in self.records:
            out.setdefault(r.agent, BatchSummary()).add(r)
        return out

    def counts(self) -> str:
        """:meth:`agent_counts`, per agent when the batch ran several (``oracle: diagnosis 3/3,
        mitigation 3/3; noop: diagnosis 0/3, mitigation 0/3``): one agent's passes are never added
        to another's."""
        agents = self.per_agent()
        if len(agents) > 1:
            return "; ".join(f"{name}: {s.agent_counts()}" for name, s in agents.items())
        return self.agent_counts()

    def agent_counts(self) -> str:
        """``diagnosis a/b, mitigation c/d`` for SRE episodes, ``compliance e/f`` for CISO ones,
        ``anomaly pinpointed g/h`` for FinOps anomaly ones (FinOps cost incidents count with SRE's)."""
        parts = []
        finops = [r for r in self.records if r.persona == "finops" and r.category == "anomaly"]
        if self.sre_ran or not (self.compliance_scored or finops):
            parts.append(
                f"diagnosis {self.diagnosis_pass}/{self.sre_ran}, "
                f"mitigation {self.mitigation_pass}/{self.mitigation_applicable}"
            )
        if any(r.persona == "ciso" for r in self.records):
            parts.append(f"compliance (strict) {self.compliance_pass}/{self.compliance_scored}")
        if finops:
            scored = [r for r in finops if "pinpointed" in r.scores]
            parts.append(
                f"anomaly pinpointed {sum(r.scores['pinpointed'].passed for r in scored)}/{len(scored)}"
            )
        return ", ".join(parts)

    def add(self, rec: EpisodeRecord) -> None:
        self.ran += 1
        self.records.append(rec)
        if "strict" in rec.scores:
            self.compliance_scored += 1
            self.compliance_pass += rec.scores["strict"].passed
        if rec.diagnosis and rec.diagnosis.correct:
            self.diagnosis_pass += 1
        if rec.mitigation and rec.mitigation.applicable:
            self.mitigation_applicable += 1
            self.mitigation_pass += rec.mitigation.passed
        if rec.termination in ("env_error", "harness_error", "agent_error"):
            self.errors += 1


class BatchInterrupted(Exception):
    """The batch was stopped by a signal; ``summary`` holds what was recorded before."""

    def __init__(self, summary: BatchSummary) -> None:
        super().__init__(f"interrupted after {summary.ran} episode(s)")
        self.summary = summary


def done_keys(run_dir: str | Path, retry_errors: bool = False) -> set[tuple[str, str, int]]:
    """Keys of the episodes already recorded in ``run_dir`` that a (resumed) batch skips: every
    recorded one, or with ``retry_errors`` only those that were scored."""
    return {r.key for r in read_episodes(run_dir) if r.scored or not retry_errors}


def run_batch(
    run_dir: str | Path,
    specs: list[EpisodeSpec],
    *,
    concurrency: int = 1,
    fail_fast: bool = False,
    retry_errors: bool = False,
    share_prepared: bool = False,
    keep_workers_busy: bool = False,
    on_record: Callable[[EpisodeRecord, BatchSummary], None] | None = None,
    executor: Executor | None = None,
) -> BatchSummary:
    """Run ``specs`` (those not done yet) on ``executor`` (``executors.py``; by default this process
    when ``concurrency`` is 1, else ``concurrency`` worker processes). With ``share_prepared``, the
    episodes of one scenario, trial and seed share one preparation of the environment
    (``shared.py``) and their records arrive together; with ``keep_workers_busy`` too, only where
    that leaves at least ``concurrency`` units of work."""
    done = done_keys(run_dir, retry_errors)
    todo = [s for s in specs if s.key not in done]
    busy = concurrency if keep_workers_busy else 0
    units = groups(todo, keep_busy=busy) if share_prepared else [[s] for s in todo]
    summary = BatchSummary(planned=len(specs), skipped=len(specs) - len(todo))
    log = EpisodeLog(run_dir)

    def finish(rec: EpisodeRecord) -> bool:
        log.append(rec)
        summary.add(rec)
        if on_record:
            on_record(rec, summary)
        return fail_fast and rec.termination != "submitted"

    try:
        summary.stopped_early = (executor or default_executor(concurrency)).run(units, finish)
        return summary
    except STOPPING:
        raise BatchInterrupted(summary) from None
    finally:
        log.close()


def start_run(
    run_dir: str | Path,
    config: RunConfig,
    registry: ScenarioLookup,
    *,
    run_id: str | None = None,
) -> tuple[RunManifest, list[EpisodeSpec], bool]:
    """Create (or reopen for resume) the run folder and plan its episodes."""
    run_dir = Path(run_dir).resolve()
    run_id = run_id or run_dir.name
    specs = plan(config, registry, run_id, run_dir)
    manifest, resumed = open_run(run_dir, new_manifest(run_id, config, len(specs)))
    if resumed:
        specs = plan(manifest.config, registry, manifest.run_id, run_dir)
    return manifest, specs, resumed
