"""Plug-ins from installed packages: agents, tools, scenario folders, personas and backends named in
entry points.

A package extends itbench-agents without editing it by declaring entry points in its
``pyproject.toml`` (``examples/plugin/`` is a complete one)::

    [project.entry-points."itbench_agents.agents"]
    runbook-responder = "my_pkg.agent:make_agent"       # factory(config: AgentConfig) -> Agent

    [project.entry-points."itbench_agents.tools"]
    runbook = "my_pkg.tools:runbook"                    # a function decorated with @tool

    [project.entry-points."itbench_agents.scenarios"]
    my-scenarios = "my_pkg.scenarios"                   # a package (its folder) or a path/callable

    [project.entry-points."itbench_agents.personas"]
    my-persona = "my_pkg.persona:PERSONA"               # a core.persona.Persona (or a callable giving one)

    [project.entry-points."itbench_agents.backends"]
    my-backend = "my_pkg.backend:MyBackend"             # a callable giving a harness.backend.Backend

    [project.entry-points."itbench_agents.executors"]
    my-executor = "my_pkg.executor:make_executor"       # (ExecutorRequest) -> harness.executors.Executor

Entry points are read when a registry is first asked for its contents, never at import time; every
process (run workers included) finds the same plug-ins, so a resumed run does too.
``ITBENCH_PLUGINS=off`` (or ``0``, ``no``, ``false``) ignores every entry point: built-ins only, as
the test suite runs so that a plug-in installed beside the checkout does not change the library.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

AGENTS_GROUP = "itbench_agents.agents"
TOOLS_GROUP = "itbench_agents.tools"
SCENARIOS_GROUP = "itbench_agents.scenarios"
PERSONAS_GROUP = "itbench_agents.personas"
BACKENDS_GROUP = "itbench_agents.backends"
EXECUTORS_GROUP = "itbench_agents.executors"
SWITCH_ENV = "ITBENCH_PLUGINS"


class PluginError(RuntimeError):
    """A plug-in's entry point that cannot be used (import fails, wrong kind of object)."""


@dataclass(frozen=True)
class Plugin:
    group: str
    name: str
    value: str
    """``module`` or ``module:attribute``, as written in the entry point."""
    distribution: str
    """The installed package that declares it, with its version (``my-pkg 0.1.0``)."""

    @property
    def source(self) -> str:
        return f"plug-in: {self.distribution}"

    def load(self) -> object:
        try:
            return metadata.EntryPoint(self.name, self.value, self.group).load()
        except Exception as exc:
            raise PluginError(
                f"plug-in {self.name!r} ({self.group} = {self.value!r}, from {self.distribution}) "
                f"does not load: {type(exc).__name__}: {exc}"
            ) from exc


def plugins(group: str) -> list[Plugin]:
    """The entry points of ``group`` in the installed distributions, sorted by name; a name
    declared twice keeps its first declaration; none when ``ITBENCH_PLUGINS`` is off."""
    if not enabled():
        return []
    out: dict[str, Plugin] = {}
    for ep in _entry_points(group):
        dist = ep.dist
        label = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "unknown package"
        out.setdefault(ep.name, Plugin(group, ep.name, ep.value, label))
    return [out[k] for k in sorted(out)]


def _entry_points(group: str) -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=group))


def enabled() -> bool:
    return os.environ.get(SWITCH_ENV, "on").strip().lower() not in ("off", "0", "no", "false")


def load_target(target: str) -> object:
    """The object a ``module:attribute`` string names (``module`` alone: the module)."""
    module, _, attr = target.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class NamedTarget:
    name: str
    target: str
    """``module:attribute`` naming a callable."""
    source: str = "built-in"


class UnknownNameError(KeyError):
    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        super().__init__(name)
        self.kind, self.name, self.known = kind, name, known

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r} (known: {', '.join(self.known)})"


class NamedTargets:
    """A registry of callables by name: the built-ins, then a group's entry points (a plug-in cannot
    take a built-in's name), and any ``module:attribute`` given directly. Nothing is imported until
    :meth:`factory` is asked for one."""

    def __init__(
        self,
        kind: str,
        group: str,
        builtin: dict[str, str],
        unavailable: Callable[[str], str | None] | None = None,
    ) -> None:
        self.kind, self.group, self.builtin = kind, group, builtin
        self.unavailable = unavailable
        """A built-in's name → why it cannot run here (an optional extra not installed), or None."""

    def entries(self) -> list[NamedTarget]:
        out = [NamedTarget(n, t) for n, t in self.builtin.items()]
        out += [
            NamedTarget(p.name, p.value, p.source) for p in plugins(self.group) if p.name not in self.builtin
        ]
        return out

    def entry(self, name: str, load: bool = False) -> NamedTarget:
        """The entry of ``name`` (a registered name, or ``module:attribute``); with ``load``, also that
        its target imports and is callable (:class:`PluginError` saying why not)."""
        entries = self.entries()
        found = next((e for e in entries if e.name == name), None)
        if found is None and ":" in name:
            found = NamedTarget(name, name, "module:attribute")
        if found is None:
            raise UnknownNameError(self.kind, name, [e.name for e in entries])
        if load:
            self.factory(found)
        return found

    def factory(self, entry: NamedTarget) -> Callable[..., Any]:
        problem = self.unavailable(entry.name) if self.unavailable and entry.source == "built-in" else None
        if problem:
            raise PluginError(problem)
        try:
            made = load_target(entry.target)
        except Exception as e:
            raise PluginError(
                f"{self.kind} {entry.name!r} ({entry.target}, {entry.source}) does not load: {type(e).__name__}: {e}"
            ) from e
        if not callable(made):
            raise PluginError(f"{self.kind} {entry.name!r} ({entry.target}, {entry.source}) is not callable")
        return made
