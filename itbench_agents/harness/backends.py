"""The backend registry: a name → ``"module:attribute"`` string naming a callable that returns a
:class:`~itbench_agents.harness.backend.Backend`, imported only when used.

The built-in is ``twin``; an installed package adds backends through the ``itbench_agents.backends``
entry points (``plugins.py``), and ``module:attribute`` names one directly. A plug-in cannot replace
a built-in's name. ``itbench backends check NAME`` runs ``check_backend()`` on one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..plugins import BACKENDS_GROUP, PluginError, load_target, plugins
from .backend import Backend

BUILTIN: dict[str, str] = {"twin": "itbench_agents.harness.twin_backend:TwinBackend"}
DEFAULT = "twin"


class UnknownBackendError(KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown backend {self.name!r} (known: {', '.join(e.name for e in backends())})"


@dataclass(frozen=True)
class BackendEntry:
    name: str
    target: str
    source: str = "built-in"


def backends() -> list[BackendEntry]:
    """The built-ins, then the plug-ins by name."""
    out = [BackendEntry(n, t) for n, t in BUILTIN.items()]
    out += [BackendEntry(p.name, p.value, p.source) for p in plugins(BACKENDS_GROUP) if p.name not in BUILTIN]
    return out


def backend_entry(name: str, load: bool = False) -> BackendEntry:
    """The entry of ``name`` (a registered name, or ``module:attribute``); with ``load``, also that
    its target imports and is callable (``PluginError`` saying why not)."""
    entry = next((e for e in backends() if e.name == name), None)
    if entry is None and ":" in name:
        entry = BackendEntry(name, name, "module:attribute")
    if entry is None:
        raise UnknownBackendError(name)
    if load:
        _factory(entry)
    return entry


def _factory(entry: BackendEntry) -> Callable[[], object]:
    try:
        factory = load_target(entry.target)
    except Exception as e:
        raise PluginError(
            f"backend {entry.name!r} ({entry.target}, {entry.source}) does not load: {type(e).__name__}: {e}"
        ) from e
    if not callable(factory):
        raise PluginError(f"backend {entry.name!r} ({entry.target}, {entry.source}) is not callable")
    return factory


def make_backend(name: str) -> Backend:
    """A fresh backend named ``name`` (a registered name, or ``module:attribute``)."""
    entry = backend_entry(name)
    made: Any = _factory(entry)()
    missing = [
        m for m in ("provision", "now", "advance", "sync", "close", "capabilities") if not hasattr(made, m)
    ]
    if missing:
        raise PluginError(
            f"backend {name!r} ({entry.source}) is not a Backend: it has no {', '.join(missing)}"
        )
    backend: Backend = made
    return backend
