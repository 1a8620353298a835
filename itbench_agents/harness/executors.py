"""Executors: how a batch's units of work (``units.py``) are run — in this process, or on a pool of
worker processes — behind one protocol, so a distributed executor plugs in beside them.

An executor runs units and hands each record to ``finish`` in the calling process (the only writer of
the run folder's ``episodes.jsonl``); when ``finish`` says stop (fail-fast) it starts no further
unit. A worker need not share the run folder's disk: with ``ship_artifacts`` it writes its episodes'
folders into a private staging folder and returns their files with the records, and the calling
process writes them into the run folder through an :class:`ArtifactSink` before the records (so a
recorded episode always has its files).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from .episode import EpisodeSpec
from .records import EpisodeRecord
from .units import STOP_GRACE_S, STOPPING, safe_run_unit, unit_crash_record, worker_init, worker_unit

Finish = Callable[[EpisodeRecord], bool]
"""Takes a record (in the calling process); True asks the executor to start no further unit."""
Files = dict[str, bytes]
"""An episode folder's files by path relative to it."""
MAX_SHIPPED_BYTES = 256 * 1024 * 1024
"""An episode folder larger than this is not shipped whole: its record says so (``artifacts.json``)."""


class Executor(Protocol):
    name: str

    def run(self, units: list[list[EpisodeSpec]], finish: Finish) -> bool:
        """Run ``units``; return whether ``finish`` stopped the batch early."""
        ...


class ArtifactSink(Protocol):
    def put(self, episode_id: str, files: Files) -> None:
        """Store one episode's folder (its files by relative path)."""
        ...


class RunFolderSink:
    """Episode folders into ``<run_dir>/episodes/<episode_id>/``, replacing what a crashed attempt left."""

    def __init__(self, run_dir: str | Path) -> None:
        self.root = Path(run_dir).resolve() / "episodes"

    def put(self, episode_id: str, files: Files) -> None:
        folder = self.root / episode_id
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for rel, data in files.items():
            target = (folder / rel).resolve()
            if not target.is_relative_to(folder.resolve()):
                continue  # never outside the episode's folder
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


class InProcessExecutor:
    """Each unit in turn, in this process."""

    name = "in-process"

    def run(self, units: list[list[EpisodeSpec]], finish: Finish) -> bool:
        # every record of a unit is finished (the list), and no unit starts after one said stop
        return any(any([finish(rec) for rec in safe_run_unit(unit)]) for unit in units)


class ProcessExecutor:
    """Units on ``concurrency`` worker processes. A worker that dies (OOM kill, segfault) breaks the
    pool: its episodes are recorded as harness errors and a fresh pool takes the rest."""

    name = "processes"
    units_may_fork = True
    """Its workers run nothing but their unit: episodes that share a preparation may fork from it
    (``shared.py``). An executor without this attribute (this process, which may run a progress
    bar's thread; Ray's workers) runs each episode from its own preparation in ``itbench run``."""

    def __init__(
        self, concurrency: int, *, ship_artifacts: bool = False, sink: ArtifactSink | None = None
    ) -> None:
        self.concurrency = max(1, concurrency)
        self.ship_artifacts = ship_artifacts or sink is not None
        self.sink = sink

    def run(self, units: list[list[EpisodeSpec]], finish: Finish) -> bool:
        ctx = _mp_context()
        queue = list(units)
        stop = False
        done = 0
        task: Callable[[list[EpisodeSpec]], Any] = worker_unit_shipped if self.ship_artifacts else worker_unit
        while queue and not stop:
            done_before = done
            pool = ProcessPoolExecutor(max_workers=self.concurrency, mp_context=ctx, initializer=worker_init)
            try:
                pending: dict[Future[Any], list[EpisodeSpec]] = {}
                broken = False

                def end(rec: EpisodeRecord) -> bool:
                    nonlocal done
                    done += 1
                    return finish(rec)

                while (queue or pending) and not broken:
                    while queue and not stop and len(pending) < self.concurrency:
                        unit = queue.pop(0)
                        try:
                            pending[pool.submit(task, unit)] = unit
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
                            recs = self._received(unit, fut.result())
                        except BaseException as e:  # noqa: BLE001 - a worker process died
                            broken = broken or isinstance(e, BrokenProcessPool)
                            recs = [unit_crash_record(s, e) for s in unit]
                            shutil.rmtree(staging_folder(unit), ignore_errors=True)
                        if any([end(rec) for rec in recs]):
                            stop = True
                    if stop:
                        queue.clear()
                if broken:
                    for fut, unit in pending.items():
                        fut.cancel()
                        shutil.rmtree(staging_folder(unit), ignore_errors=True)
                        for s in unit:
                            end(unit_crash_record(s, BrokenProcessPool("the worker pool broke")))
                    if not pending and queue and done == done_before:
                        # the pool broke before running anything: never loop forever
                        for s in queue.pop(0):
                            end(unit_crash_record(s, BrokenProcessPool("cannot start worker processes")))
                    pending.clear()
            except STOPPING:
                _stop_pool(pool)
                raise
            pool.shutdown(wait=True)
        return stop

    def _received(self, unit: list[EpisodeSpec], result: Any) -> list[EpisodeRecord]:
        """The records of a finished unit, its shipped folders stored first."""
        if not self.ship_artifacts:
            return list(result)
        return store_shipped(self.sink or RunFolderSink(unit[0].run_dir), result)


def store_shipped(sink: ArtifactSink, result: Shipped) -> list[EpisodeRecord]:
    """A shipped unit's records, once its episodes' folders are stored (a recorded episode always
    has its files)."""
    records, shipped = result
    for episode_id, files in shipped.items():
        sink.put(episode_id, files)
    return list(records)


Shipped = tuple[list[EpisodeRecord], dict[str, Files]]
"""A unit's records and its episodes' folders, as a worker that does not share the run folder returns them."""


def worker_unit_shipped(unit: list[EpisodeSpec]) -> Shipped:
    """A worker process's unit, shipped (:func:`shipped_unit`)."""
    return shipped_unit(unit, worker_unit)


def shipped_unit(unit: list[EpisodeSpec], run: Callable[[list[EpisodeSpec]], list[EpisodeRecord]]) -> Shipped:
    """``run`` the unit with its episodes' folders written to a private staging folder, then read
    back as files to ship (the worker needs no access to the run folder). The staging folder is
    named after the unit, so a rerun after a killed attempt starts by removing what it left."""
    staging = staging_folder(unit)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        records = run([replace(s, artifacts_dir=str(staging)) for s in unit])
        shipped = {s.episode_id: _read_folder(staging / "episodes" / s.episode_id) for s in unit}
        return records, shipped
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def staging_folder(unit: list[EpisodeSpec]) -> Path:
    """Where a worker stages the unit's episode folders (in its machine's temp folder). A worker
    that dies leaves it: the calling process removes it when it records the crash (same machine),
    and a rerun of the unit removes it first."""
    key = "\0".join([str(unit[0].run_dir), *(s.episode_id for s in unit)])
    return Path(tempfile.gettempdir()) / f"itbench-artifacts-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _read_folder(folder: Path) -> Files:
    files: Files = {}
    total = 0
    for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if not p.is_file() or p.is_symlink():
            continue
        size = p.stat().st_size
        if total + size > MAX_SHIPPED_BYTES:
            note = {
                "truncated": True,
                "limit_bytes": MAX_SHIPPED_BYTES,
                "first_left_out": str(p.relative_to(folder)),
            }
            files["artifacts.json"] = (json.dumps(note) + "\n").encode()
            break
        files[str(p.relative_to(folder))] = p.read_bytes()
        total += size
    return files


def default_executor(concurrency: int) -> Executor:
    return InProcessExecutor() if concurrency <= 1 else ProcessExecutor(concurrency)


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
