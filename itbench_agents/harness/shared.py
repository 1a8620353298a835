"""Episodes that share one preparation: deploy, baseline, injection and alert wait once, then one
forked child process per episode.

The episodes of one scenario, trial and seed start from the same cluster: the twin's clock is
paused while the harness prepares it, so a preparation is the same whichever agent follows. The
audit runs a dozen strategies per scenario; preparing once and forking a child per strategy (each
child serves the prepared twin on ports of its own, runs its agent, settles and scores, exactly as
:func:`episode.run_episode` does) gives each the state a fresh preparation would, for the cost of
one.

Only where the process can fork safely: POSIX ``fork``, a twin scenario file on the built-in twin
environment (:func:`shareable`), and no thread left besides the caller's once the twin stopped
serving; otherwise each episode prepares its own environment. A child that dies gets a
``harness_error`` record; the others still run. Each episode's ``harness_overhead_s`` counts its
share of the preparation (``Timing.preparation_shared_by``).

``scenarios audit`` shares the preparation of each scenario among its strategies; ``itbench run``
among its agents, where its workers are processes (``ProcessExecutor.units_may_fork``) and sharing
leaves none of them idle (:func:`groups` with ``keep_busy``).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Hashable, Iterable

from ..scenario.spec import Scenario
from .episode import EpisodeSpec, Prepared, _utc, agent_config_for, prepare, run_episode
from .records import EpisodeRecord
from .workdir import private_workdir

THREADS_GONE_S = 5.0
"""How long the preparing process waits for the twin's server threads to end before it forks."""


def share_key(spec: EpisodeSpec) -> Hashable:
    """Episodes with equal keys start from the same prepared environment."""
    return (
        spec.scenario.id,
        spec.trial,
        spec.seed,
        tuple(spec.masked),
        spec.history_s,
        spec.settle_s,
        spec.environment,
        spec.backend,
        spec.churn,
    )


def shareable(spec: EpisodeSpec) -> bool:
    """Whether ``spec``'s environment can be prepared once and forked: a twin scenario file
    (SRE, FinOps cost incidents) on the built-in twin. A persona's own environment (CISO, FinOps
    anomalies) or another backend prepares per episode."""
    return spec.environment == "twin" and spec.backend == "twin" and isinstance(spec.scenario, Scenario)


def groups(specs: Iterable[EpisodeSpec], keep_busy: int = 0) -> list[list[EpisodeSpec]]:
    """``specs`` grouped by :func:`share_key`, in order of first appearance; a spec that is not
    :func:`shareable` is a unit of its own. With ``keep_busy`` (the number of workers), no sharing
    when it would leave fewer units than workers: the episodes of a unit run one after another, and
    idle workers would cost more than the preparations saved (an LLM agent's turn takes minutes)."""
    out: dict[Hashable, list[EpisodeSpec]] = {}
    for i, s in enumerate(specs):
        out.setdefault(share_key(s) if shareable(s) else ("alone", i), []).append(s)
    units = list(out.values())
    if len(units) < keep_busy:
        return [[s] for unit in units for s in unit]
    return units


def can_fork() -> bool:
    return hasattr(os, "fork") and hasattr(os, "waitpid")


def _alone(deadline_s: float = THREADS_GONE_S) -> bool:
    """Whether the calling thread is the process's only one (waiting up to ``deadline_s``)."""
    end = time.monotonic() + deadline_s
    while threading.active_count() > 1 and time.monotonic() < end:
        time.sleep(0.02)
    return threading.active_count() == 1


def crash_record(spec: EpisodeSpec, why: str) -> EpisodeRecord:
    now = _utc()
    return spec.record(termination="harness_error", error=why, started_at=now, finished_at=now, wall_s=0.0)


def _warm(specs: list[EpisodeSpec]) -> None:
    """Load in the preparing process what every child would otherwise load for itself: the token
    encoding that caps tool observations (a quarter of a second each), the built-in tools, and what
    the agents' turns import (``agents.registry.warm``: an LLM agent's libraries take seconds, which
    each child would otherwise spend inside its agent's timed turn)."""
    from ..agents.registry import warm
    from ..llm.tokens import count_tokens
    from ..tools.registry import all_tools

    count_tokens("")
    all_tools()
    for spec in {s.agent.display: s for s in specs}.values():
        warm(spec.agent.name, agent_config_for(spec.agent))


def _in_child(spec: EpisodeSpec, prepared: Prepared, wfd: int) -> None:
    """The forked child: run the episode, send its record, and leave without the parent's cleanup."""
    code = 0
    try:
        rec = run_episode(spec, prepared)
        data = rec.model_dump_json().encode()
        view = memoryview(data)
        while view:
            view = view[os.write(wfd, view) :]
    except BaseException:  # noqa: BLE001 - the parent records a crash when no record arrives
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _run_child(spec: EpisodeSpec, prepared: Prepared) -> EpisodeRecord:
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        os.close(rfd)
        _in_child(spec, prepared, wfd)
    os.close(wfd)
    chunks = []
    with os.fdopen(rfd, "rb") as r:
        while chunk := r.read(1 << 16):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if not data:
        return crash_record(spec, f"the episode's process ended without a record (wait status {status})")
    try:
        return EpisodeRecord.model_validate_json(data)
    except ValueError as e:
        return crash_record(spec, f"the episode's process sent an unreadable record: {e}")


def run_shared(
    specs: list[EpisodeSpec], on_record: Callable[[EpisodeRecord], None] | None = None
) -> list[EpisodeRecord]:
    """Run ``specs`` (one :func:`share_key`) from one preparation; each episode in a forked child.

    Falls back to one preparation per episode where forking is not safe."""
    records: list[EpisodeRecord] = []

    def done(rec: EpisodeRecord) -> None:
        records.append(rec)
        if on_record:
            on_record(rec)

    if (
        len(specs) < 2
        or not can_fork()
        or specs[0].environment != "twin"
        or specs[0].backend != "twin"
        or not _alone()
    ):
        for s in specs:
            done(run_episode(s))
        return records
    work = private_workdir()
    t0 = time.perf_counter()
    prepared = prepare(specs[0], work, t0)
    prepared.shared_by = len(specs)
    env = prepared.env
    forked = False
    try:
        detach = getattr(env, "detach", None)
        if prepared.failure is not None:
            prepared.wall_s = time.perf_counter() - t0
            for s in specs:  # each would have failed the same way: the preparation is deterministic
                done(run_episode(s, prepared))
        elif callable(detach):
            detach()
            _warm(specs)
            if _alone():
                prepared.wall_s = time.perf_counter() - t0
                forked = True
                for ev in prepared.events:
                    if ev.phase == "deployed" and isinstance(ev.detail, dict):
                        ev.detail["shared_by"] = len(specs)
                for s in specs:
                    done(_run_child(s, prepared))
    finally:
        if env is not None:
            try:
                env.teardown()
            except Exception:  # noqa: BLE001 - best effort, as run_episode's own teardown
                traceback.print_exc()
        shutil.rmtree(work, ignore_errors=True)
    if prepared.failure is None and not forked:  # a thread would not end: no safe fork
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.current_thread())
        warnings.warn(
            f"{specs[0].scenario.id}: threads still running ({names}): each episode prepares its own environment",
            RuntimeWarning,
            stacklevel=2,
        )
        for s in specs:
            done(run_episode(s))
    return records
