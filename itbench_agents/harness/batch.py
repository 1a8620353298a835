"""Batches: scenarios × trials × agents, bounded process concurrency, live progress, resume.

The parent process is the only writer of ``episodes.jsonl``; workers (``spawn``ed processes when
``concurrency > 1``, the parent itself otherwise) run whole episodes and return their records.

Interrupts: Ctrl-C (SIGINT) or SIGTERM stops the batch. No new episode starts; the episodes in
flight end where they are (their environments torn down: the exception runs their clean-up, and
worker processes that do not end within :data:`STOP_GRACE_S` are killed) and are *not* recorded,
so a resumed run (the same command and run folder, or ``itbench run --resume``) runs them again.
:func:`run_batch` then raises :class:`BatchInterrupted` with what it recorded before.
"""

from __future__ import annotations

import datetime as _dt
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from .catalogue import ScenarioLookup
from .episode import EpisodeSpec, _utc, run_episode, trial_seed
from .records import EpisodeRecord, RunConfig, RunManifest
from .runfolder import EpisodeLog, git_revision, open_run, package_versions, read_episodes
from .shared import crash_record, groups, run_shared


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


STOP_GRACE_S = 10.0
"""How long interrupted worker processes get to tear their episodes down before they are killed."""


class Interrupted(BaseException):
    """Raised by the signal handlers of :func:`interrupt_on_signals` (a BaseException, like
    KeyboardInterrupt: no ``except Exception`` on the way may swallow it)."""


class BatchInterrupted(Exception):
    """The batch was stopped by a signal; ``summary`` holds what was recorded before."""

    def __init__(self, summary: BatchSummary) -> None:
        super().__init__(f"interrupted after {summary.ran} episode(s)")
        self.summary = summary


STOPPING = (KeyboardInterrupt, Interrupted)


@dataclass
class _Received:
    """The first stopping signal this process received since :func:`interrupt_on_signals`."""

    name: str | None = None


_RECEIVED = _Received()


def _stop_if_signalled() -> None:
    """Raise :class:`Interrupted` when a signal arrived, even if code on the way (a library that
    catches ``BaseException``) turned its exception into something else: no record of an episode
    in flight when the signal came is kept."""
    if _RECEIVED.name is not None:
        raise Interrupted(_RECEIVED.name)


def _exit_now(signum: int, frame: FrameType | None) -> None:
    os._exit(128 + signum)


def interrupt_on_signals(second_exits: bool = False) -> Callable[[], None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread, once; a second signal is
    ignored (the clean-up the first one started runs on) or, with ``second_exits``, ends the
    process at once. Returns a function that puts the previous handlers back."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _RECEIVED.name = None

    def first(signum: int, frame: FrameType | None) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_now if second_exits else signal.SIG_IGN)
        _RECEIVED.name = signal.Signals(signum).name
        raise Interrupted(_RECEIVED.name)

    _RECEIVED.name = None

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, first)
    return restore


def _crash_record(spec: EpisodeSpec, exc: BaseException) -> EpisodeRecord:
    return crash_record(spec, f"worker crashed: {type(exc).__name__}: {exc}")


def _safe_run(spec: EpisodeSpec) -> EpisodeRecord:
    try:
        return run_episode(spec)
    except STOPPING:
        raise  # not the episode's fault: the batch stops and does not record it
    except BaseException as e:  # noqa: BLE001 - run_episode should not raise; be sure anyway
        traceback.print_exc()
        return _crash_record(spec, e)


def _safe_run_unit(unit: list[EpisodeSpec]) -> list[EpisodeRecord]:
    """Run one unit of work: a single episode, or episodes that share one preparation (``shared.py``)."""
    if len(unit) == 1:
        records = [_safe_run(unit[0])]
    else:
        try:
            records = run_shared(unit)
        except STOPPING:
            raise
        except BaseException as e:  # noqa: BLE001 - run_shared should not raise; be sure anyway
            traceback.print_exc()
            records = [_crash_record(s, e) for s in unit]
    _stop_if_signalled()
    return records


def _worker_init() -> None:
    interrupt_on_signals()


def _worker_unit(unit: list[EpisodeSpec]) -> list[EpisodeRecord]:
    """A worker process's unit: interrupted, it ends once the episode's clean-up has run (the
    pool would otherwise hand it the next unit)."""
    try:
        return _safe_run_unit(unit)
    except STOPPING:
        sys.stderr.flush()
        os._exit(130)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started, ask the workers to stop (SIGTERM: their episodes tear down),
    and kill those still there after :data:`STOP_GRACE_S`."""
    procs: list[Any] = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(1.0)


def _mp_context() -> multiprocessing.context.BaseContext:
    """``forkserver`` with the harness and twin preloaded where available (workers start in
    milliseconds, no thread-unsafe fork of this process); ``spawn`` elsewhere."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["itbench_agents.harness.episode", "itbench_agents.twin.instance"])
        return ctx
    return multiprocessing.get_context("spawn")


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
    on_record: Callable[[EpisodeRecord, BatchSummary], None] | None = None,
) -> BatchSummary:
    """Run ``specs`` (those not done yet), ``concurrency`` worker processes at a time. With
    ``share_prepared``, the episodes of one scenario, trial and seed share one preparation of the
    environment (``shared.py``) and their records arrive together."""
    done = done_keys(run_dir, retry_errors)
    todo = [s for s in specs if s.key not in done]
    units = groups(todo) if share_prepared else [[s] for s in todo]
    summary = BatchSummary(planned=len(specs), skipped=len(specs) - len(todo))
    log = EpisodeLog(run_dir)

    def finish(rec: EpisodeRecord) -> bool:
        log.append(rec)
        summary.add(rec)
        if on_record:
            on_record(rec, summary)
        return fail_fast and rec.termination != "submitted"

    try:
        if concurrency <= 1:
            for unit in units:
                if any([finish(rec) for rec in _safe_run_unit(unit)]):
                    summary.stopped_early = True
                    break
            return summary
        return _run_pool(units, concurrency, summary, finish)
    except STOPPING:
        raise BatchInterrupted(summary) from None
    finally:
        log.close()


def _run_pool(
    units: list[list[EpisodeSpec]],
    concurrency: int,
    summary: BatchSummary,
    finish: Callable[[EpisodeRecord], bool],
) -> BatchSummary:
    """The batch on ``concurrency`` worker processes (see :func:`run_batch`)."""
    ctx = _mp_context()
    queue = list(units)
    stop = False
    while queue and not stop:
        # a worker that dies (OOM kill, segfault) breaks the pool: its episodes are recorded as
        # harness errors and a fresh pool takes the rest of the queue
        ran_before = summary.ran
        pool = ProcessPoolExecutor(max_workers=concurrency, mp_context=ctx, initializer=_worker_init)
        try:
            pending: dict[Future[list[EpisodeRecord]], list[EpisodeSpec]] = {}
            broken = False
            while (queue or pending) and not broken:
                while queue and not stop and len(pending) < concurrency:
                    unit = queue.pop(0)
                    try:
                        pending[pool.submit(_worker_unit, unit)] = unit
                    except BrokenProcessPool:
                        queue.insert(0, unit)
                        broken = True
                        break
                if not pending:
                    break
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in finished:
                    unit = pending.pop(fut)
                    try:
                        recs = fut.result()
                    except BaseException as e:  # noqa: BLE001 - a worker process died
                        broken = broken or isinstance(e, BrokenProcessPool)
                        recs = [_crash_record(s, e) for s in unit]
                    if any([finish(rec) for rec in recs]):
                        stop = True
                        summary.stopped_early = True
                if stop:
                    queue.clear()
            if broken:
                for fut, unit in pending.items():
                    fut.cancel()
                    for s in unit:
                        finish(_crash_record(s, BrokenProcessPool("the worker pool broke")))
                if not pending and queue and summary.ran == ran_before:
                    # the pool broke before running anything: never loop forever
                    for s in queue.pop(0):
                        finish(_crash_record(s, BrokenProcessPool("cannot start worker processes")))
                pending.clear()
        except STOPPING:
            _stop_pool(pool)
            raise
        pool.shutdown(wait=True)
    return summary


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
