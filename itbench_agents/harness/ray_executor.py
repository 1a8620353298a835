"""The Ray executor (``--executor ray``): a batch's units as Ray tasks, on a local Ray this process
starts or on a Ray cluster (``--ray-address``, or Ray's own ``RAY_ADDRESS``).

Each task runs its unit as a worker process of ``processes-shipped`` does: the episodes' folders
are written into a private staging folder on the worker's machine and shipped back with the
records, and this process (the only writer of the run folder) stores the files through the
artifact sink before it records the episodes. At most ``--concurrency`` tasks are in flight. A
worker that dies mid-episode (OOM kill, a lost node) has its unit rerun once by Ray
(``max_retries``); dying again, its episodes are recorded as harness errors. Ctrl-C or SIGTERM
stops the Ray the run started (its workers get SIGTERM: the episodes in flight tear down and are not
recorded) and the run resumes like any other. Ray is an optional dependency: ``pip install 'itbench-agents[ray]'``.

On a cluster every node needs the same itbench-agents (and any plug-in agent's package) installed
as the driver: tasks carry the episode specs, not the code (or ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=1``
with ``uv run``: Ray then ships the uv project).
"""

from __future__ import annotations

import os
import shutil
import socket
from typing import Any

from ..extras import require_extra
from ..plugins import PluginError
from .episode import EpisodeSpec
from .executor_registry import ExecutorRequest
from .executors import (
    ArtifactSink,
    Finish,
    RunFolderSink,
    Shipped,
    shipped_unit,
    staging_folder,
    store_shipped,
)
from .records import EpisodeRecord
from .shared import crash_record
from .units import STOPPING, Interrupted, safe_run_unit, signalled, stop_if_signalled

RETRIES = 1
"""How many times Ray reruns a unit whose worker died (then its episodes are harness errors)."""
CONNECT_TIMEOUT_S = 5.0
"""How long a cluster address gets to accept a connection before the run is refused."""


class RayExecutor:
    """Units as Ray tasks, ``concurrency`` at a time, episode folders shipped back to this process."""

    name = "ray"

    def __init__(
        self,
        concurrency: int,
        *,
        address: str | None = None,
        sink: ArtifactSink | None = None,
        retries: int = RETRIES,
    ) -> None:
        self.concurrency = max(1, concurrency)
        self.address = address
        self.sink = sink
        self.retries = retries
        self._ray: Any = None
        self._started = False

    def connect(self) -> None:
        """Join the Ray cluster at ``address`` (or ``RAY_ADDRESS``), or start a local Ray with
        ``concurrency`` CPUs; a Ray this process already joined is used as it is. Raises
        :class:`PluginError` with the reason when Ray is not installed or the cluster does not answer."""
        if self._ray is not None:
            return
        ray = import_ray()
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS") or None
            try:
                if address:
                    _answers(address)
                    ray.init(address=address, namespace="itbench")
                else:
                    ray.init(num_cpus=self.concurrency, include_dashboard=False, namespace="itbench")
            except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, ValueError, RuntimeError...
                where = f"the Ray cluster at {address}" if address else "a local Ray"
                raise PluginError(f"executor 'ray': could not start or reach {where}: {e}") from e
            self._started = True
        self._ray = ray

    def run(self, units: list[list[EpisodeSpec]], finish: Finish) -> bool:
        self.connect()
        ray = self._ray
        task = ray.remote(max_retries=self.retries, retry_exceptions=False, num_cpus=1)(ray_unit)
        queue = list(units)
        pending: dict[Any, list[EpisodeSpec]] = {}
        stop = False
        try:
            while queue or pending:
                while queue and not stop and len(pending) < self.concurrency:
                    unit = queue.pop(0)
                    pending[task.remote(unit)] = unit
                if not pending:
                    break
                finished, _ = ray.wait(list(pending), num_returns=1)
                for ref in finished:
                    unit = pending.pop(ref)
                    if any([finish(rec) for rec in self._received(unit, ref)]):
                        stop = True
                if stop:
                    queue.clear()
            return stop
        except BaseException as e:
            # Ray's compiled calls (wait, get) turn the exception a signal's handler raised inside
            # them into a SystemError: what was received decides, not the exception's type
            if not isinstance(e, STOPPING) and signalled() is not None:
                raise Interrupted(signalled()) from None
            raise
        finally:
            # Stopped or not, the Ray this run started stops here: its workers get SIGTERM, so an
            # episode in flight ends in a SystemExit that runs its clean-up (its twin torn down), and
            # is not recorded. Tasks are never cancelled one by one: ray.cancel on a task that is
            # finishing trips a check in Ray 2.60's core worker and kills this process.
            if self._started:
                ray.shutdown()
                self._ray, self._started = None, False

    def _received(self, unit: list[EpisodeSpec], ref: Any) -> list[EpisodeRecord]:
        """A finished task's records, its shipped folders stored first; a task that failed (its
        worker died twice, its node was lost, it could not be unpickled) is a harness error."""
        try:
            result: Shipped = self._ray.get(ref)
        except STOPPING:
            raise
        except Exception as e:  # noqa: BLE001 - ray.exceptions.RayError and its kind
            stop_if_signalled()  # a signal inside ray.get, not the task's failure
            shutil.rmtree(staging_folder(unit), ignore_errors=True)  # a local Ray's dead worker's
            return [crash_record(s, _failure(e)) for s in unit]
        return store_shipped(self.sink or RunFolderSink(unit[0].run_dir), result)


def ray_unit(unit: list[EpisodeSpec]) -> Shipped:
    """A Ray task's unit, run as in this process but without our signal handlers or ``os._exit``:
    at the end of an interrupted run Ray's SIGTERM raises SystemExit in the task, which runs the
    episode's clean-up."""
    return shipped_unit(unit, safe_run_unit)


def _answers(address: str) -> None:
    """A ``host:port`` (or ``ray://host:port``) that does not accept a connection within
    :data:`CONNECT_TIMEOUT_S` raises ``ConnectionError`` (Ray itself retries for minutes); ``auto``
    and other forms are left to Ray."""
    hostport = address.removeprefix("ray://").rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise ConnectionError(f"{hostport} does not answer ({e.strerror or e})") from None


def import_ray() -> Any:
    """Ray, with its ``uv run`` hook off unless the user turned it on: under ``uv run itbench`` Ray
    would otherwise upload the working folder and build a new environment for its workers (seconds
    per run, and the wrong folder when the command runs elsewhere). Set
    ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=1`` to let it ship a uv project to a cluster."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        require_extra("ray", "executor 'ray'")
        import ray
    except ImportError as e:
        raise PluginError(str(e)) from e
    return ray


def _failure(e: Exception) -> str:
    """A task's failure in one line (Ray's messages carry the whole remote traceback)."""
    first = (str(e).strip().splitlines() or [""])[0]
    return f"ray task failed: {type(e).__name__}: {first}".rstrip(": ")


def make_ray_executor(request: ExecutorRequest) -> RayExecutor:
    """The ``ray`` executor for ``itbench run``: connected (or its local Ray started) before the
    first episode, so an unreachable cluster fails the run with the reason and records nothing."""
    executor = RayExecutor(request.concurrency, address=request.address, sink=RunFolderSink(request.run_dir))
    executor.connect()
    return executor
