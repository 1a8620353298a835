"""The backend registry: a name → ``"module:attribute"`` string naming a callable that returns a
:class:`~itbench_agents.harness.backend.Backend`, imported only when used.

The built-in is ``twin``; an installed package adds backends through the ``itbench_agents.backends``
entry points (``plugins.py``), and ``module:attribute`` names one directly. A plug-in cannot replace
a built-in's name. ``itbench backends check NAME`` runs ``check_backend()`` on one.
"""

from __future__ import annotations

from typing import Any

from ..plugins import BACKENDS_GROUP, NamedTarget, NamedTargets, PluginError
from ..plugins import UnknownNameError as UnknownBackendError
from .backend import Backend

BUILTIN: dict[str, str] = {
    "twin": "itbench_agents.harness.twin_backend:TwinBackend",
    "live": "itbench_agents.harness.live_backend:LiveBackend",
}
DEFAULT = "twin"
REGISTRY = NamedTargets("backend", BACKENDS_GROUP, BUILTIN)

__all__ = ["BUILTIN", "DEFAULT", "UnknownBackendError", "backend_entry", "backends", "make_backend"]


def backends() -> list[NamedTarget]:
    """The built-ins, then the plug-ins by name."""
    return REGISTRY.entries()


def backend_entry(name: str, load: bool = False) -> NamedTarget:
    """The entry of ``name`` (a registered name, or ``module:attribute``); with ``load``, also that
    its target imports and is callable (``PluginError`` saying why not)."""
    return REGISTRY.entry(name, load)


def make_backend(name: str) -> Backend:
    """A fresh backend named ``name`` (a registered name, or ``module:attribute``)."""
    entry = REGISTRY.entry(name)
    made: Any = REGISTRY.factory(entry)()
    missing = [
        m for m in ("provision", "now", "advance", "sync", "close", "capabilities") if not hasattr(made, m)
    ]
    if missing:
        raise PluginError(
            f"backend {name!r} ({entry.source}) is not a Backend: it has no {', '.join(missing)}"
        )
    backend: Backend = made
    return backend
