"""The persona registry: a name → ``"module:attribute"`` string, imported only when used, so the
harness depends on the :class:`~itbench_agents.core.persona.Persona` protocol and never on a persona's
package (import-linter checks it).

The built-ins (SRE, CISO, FinOps) are listed here; an installed package adds a persona through the
``itbench_agents.personas`` entry points (``plugins.py``), whose value is a ``Persona`` object or a
callable that returns one. A plug-in cannot replace a built-in's name.
"""

from __future__ import annotations

import functools
from typing import Any

from ..core.persona import Persona
from ..plugins import PERSONAS_GROUP, PluginError, plugins
from ..plugins import load_target as _load

BUILTIN: dict[str, str] = {
    "sre": "itbench_agents.personas.sre.persona:PERSONA",
    "ciso": "itbench_agents.personas.ciso.persona:PERSONA",
    "finops": "itbench_agents.personas.finops.persona:PERSONA",
}


class UnknownPersonaError(KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown persona {self.name!r} (known: {', '.join(persona_names())})"


def persona_names() -> list[str]:
    """Every persona's name: the built-ins in their order, then the plug-ins' by name."""
    return [*BUILTIN, *(p.name for p in plugins(PERSONAS_GROUP) if p.name not in BUILTIN)]


def get_persona(name: str) -> Persona:
    """The persona named ``name`` (imported on first use)."""
    if name in BUILTIN:
        return _builtin(name)
    for p in plugins(PERSONAS_GROUP):
        if p.name == name:
            return _checked(name, p.load(), p.source)
    raise UnknownPersonaError(name)


def all_personas() -> tuple[list[Persona], dict[str, str]]:
    """Every persona that loads, and why each of the others does not (a broken plug-in), by name."""
    ok: list[Persona] = []
    broken: dict[str, str] = {}
    for n in persona_names():
        try:
            ok.append(get_persona(n))
        except PluginError as e:
            broken[n] = str(e)
    return ok, broken


def persona_of(scenario: Any) -> Persona:
    """The persona a scenario belongs to (by its ``persona`` field)."""
    return get_persona(scenario.persona)


@functools.cache
def _builtin(name: str) -> Persona:
    return _checked(name, _load(BUILTIN[name]), "built-in")


def _checked(name: str, obj: object, source: str) -> Persona:
    if isinstance(obj, type) or (callable(obj) and not _looks_like_persona(obj)):
        obj = obj()  # a class or a factory: the persona is what it makes
    if not _looks_like_persona(obj):
        raise PluginError(
            f"persona {name!r} ({source}) is not a Persona: it needs name, description, library(), "
            "tags(), record_fields(), make_environment() and twin_extension()"
        )
    if obj.name != name:  # type: ignore[attr-defined]
        raise PluginError(f"persona {name!r} ({source}) calls itself {obj.name!r}")  # type: ignore[attr-defined]
    return obj  # type: ignore[return-value]


_MEMBERS = ("name", "description", "library", "tags", "record_fields", "make_environment", "twin_extension")


def _looks_like_persona(obj: object) -> bool:
    return all(hasattr(obj, m) for m in _MEMBERS)
