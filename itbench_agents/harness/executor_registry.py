"""The executor registry: a name → ``"module:attribute"`` string naming a callable that takes an
:class:`ExecutorRequest` and returns an :class:`~itbench_agents.harness.executors.Executor`.

Built-ins: ``in-process`` (one unit after another in this process), ``processes`` (a pool of
``--concurrency`` worker processes writing into the run folder) and ``processes-shipped`` (the
same pool, each worker writing its episodes into a private staging folder and shipping the files
back, as an executor on other machines must) and ``ray`` (units as Ray tasks on a local Ray or a
cluster, ``ray_executor.py``; needs the ``[ray]`` extra). An installed package adds executors through the
``itbench_agents.executors`` entry points (``plugins.py``); ``module:attribute`` names one directly.
Without ``--executor``, ``itbench run`` takes ``in-process`` at ``--concurrency 1`` and
``processes`` above.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..extras import MissingExtraError, missing_modules
from ..plugins import EXECUTORS_GROUP, NamedTarget, NamedTargets, PluginError
from ..plugins import UnknownNameError as UnknownExecutorError
from .executors import Executor, InProcessExecutor, ProcessExecutor, RunFolderSink, default_executor

__all__ = ["ExecutorRequest", "UnknownExecutorError", "executor_entry", "executors", "make_executor"]


@dataclass(frozen=True)
class ExecutorRequest:
    """What an executor factory is given."""

    concurrency: int
    """How many units may run at once (``--concurrency``)."""
    run_dir: Path
    """The run folder the records and episode folders go to (written by the calling process)."""
    address: str | None = None
    """Where a distributed executor's cluster is (``--ray-address``); None: its own default."""


def _on_this_machine(name: str, request: ExecutorRequest) -> None:
    if request.address:
        raise PluginError(f"executor {name!r} runs on this machine: --ray-address is for --executor ray")


def in_process(request: ExecutorRequest) -> Executor:
    _on_this_machine("in-process", request)
    if request.concurrency > 1:
        raise PluginError(
            f"executor 'in-process' runs one episode at a time; --concurrency {request.concurrency} "
            "needs 'processes' (or leave --executor out)"
        )
    return InProcessExecutor()


def processes(request: ExecutorRequest) -> Executor:
    _on_this_machine("processes", request)
    return ProcessExecutor(request.concurrency)


def processes_shipped(request: ExecutorRequest) -> Executor:
    _on_this_machine("processes-shipped", request)
    return ProcessExecutor(request.concurrency, sink=RunFolderSink(request.run_dir))


BUILTIN: dict[str, str] = {
    "in-process": f"{__name__}:in_process",
    "processes": f"{__name__}:processes",
    "processes-shipped": f"{__name__}:processes_shipped",
    "ray": "itbench_agents.harness.ray_executor:make_ray_executor",
}
NEEDS_EXTRA = {"ray": "ray"}
"""Built-in executor → the optional extra it needs."""


def _unavailable(name: str) -> str | None:
    extra = NEEDS_EXTRA.get(name)
    missing = missing_modules(extra) if extra else []
    return str(MissingExtraError(extra, f"executor {name!r}", missing)) if extra and missing else None


REGISTRY = NamedTargets("executor", EXECUTORS_GROUP, BUILTIN, unavailable=_unavailable)


def executors() -> list[NamedTarget]:
    """The built-ins, then the plug-ins by name."""
    return REGISTRY.entries()


def executor_entry(name: str, load: bool = False) -> NamedTarget:
    return REGISTRY.entry(name, load)


def make_executor(name: str | None, request: ExecutorRequest) -> Executor:
    """The executor ``name`` (None: ``in-process`` at concurrency 1, ``processes`` above) for ``request``;
    :class:`PluginError` when it does not load, refuses the request or is not an executor."""
    if name is None:
        if request.address:
            raise PluginError("--ray-address is for --executor ray")
        return default_executor(request.concurrency)
    entry = REGISTRY.entry(name)
    made: Any = REGISTRY.factory(entry)(request)
    if not callable(getattr(made, "run", None)):
        raise PluginError(f"executor {name!r} ({entry.source}) is not an Executor: it has no run()")
    executor: Executor = made
    return executor
