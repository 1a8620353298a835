"""Every persona's scenarios behind one lookup, for the harness: the twin's scenario files (the
scenario registry, ``scenario/registry.py``) and each persona's library of its own formats (CISO's
compliance tasks, FinOps' billing anomalies, a plug-in persona's), found through the persona registry
(``personas.py``) without importing a persona's package.

``get`` and ``select`` answer as the SRE registry does (exact ids, bare names, globs, ``--suite
persona[:tag]``, tags); a suite or id of another persona is looked up in that persona's library.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..core.persona import PersonaScenario
from ..scenario.registry import ScenarioRegistry, ScenarioSelectionError, UnknownScenarioError
from ..scenario.spec import Scenario
from .personas import all_personas, get_persona, persona_names

LibraryScenario = PersonaScenario
"""A scenario of a persona's library (``Persona.library()``): an id, a persona, tags."""
AnyScenario = Scenario | LibraryScenario


class ScenarioLookup(Protocol):
    """What planning a run needs: an id's scenario (a :class:`Catalogue`, or the SRE registry alone)."""

    def get(self, sid: str) -> AnyScenario: ...


@dataclass
class Catalogue:
    sre: ScenarioRegistry
    library: dict[str, list[LibraryScenario]] = field(default_factory=dict)
    """Each persona's library scenarios, by persona (in the persona registry's order)."""
    broken: dict[str, str] = field(default_factory=dict)
    """Plug-in personas that do not load, with the reason (``--suite`` of one says it)."""

    @classmethod
    def default(cls) -> Catalogue:
        """The scenario registry's folders (library, plug-ins, ``--scenarios-dir``) and every
        persona's library (CISO's under ``ciso/<class>/``, FinOps' under ``finops/<class>/``)."""
        personas, broken = all_personas()
        return cls(ScenarioRegistry.default(), {p.name: list(p.library()) for p in personas}, broken)

    def _library(self, persona: str | None = None) -> list[LibraryScenario]:
        return [s for name, lib in self.library.items() if persona in (None, name) for s in lib]

    def _lib_by_id(self) -> dict[str, LibraryScenario]:
        return {s.id: s for s in self._library()}

    def ids(self) -> list[str]:
        return sorted([*self.sre.ids(), *self._lib_by_id()])

    def get(self, sid: str) -> AnyScenario:
        by_id = self._lib_by_id()
        for cand in (sid, *(f"{name}/{sid}" for name in self.library)):
            if cand in by_id:
                return by_id[cand]
        try:
            return self.sre.get(sid)
        except UnknownScenarioError:
            import difflib

            close = difflib.get_close_matches(sid, self.ids(), n=3, cutoff=0.5)
            raise UnknownScenarioError(sid, close or self.sre.suggest(sid)) from None

    def select(
        self, ids: Iterable[str] = (), suite: str | None = None, tags: Iterable[str] = ()
    ) -> list[AnyScenario]:
        """As :meth:`ScenarioRegistry.select`, over every persona. A library scenario is tagged as
        its persona says (``Persona.tags``: CISO's by their tags, class and CIS ids, FinOps' by their
        tags and class)."""
        ids, tags = list(ids), list(tags)
        persona, _, suite_tag = (suite or "").partition(":")
        names = persona_names()
        if persona in self.broken:
            raise ScenarioSelectionError(self.broken[persona])
        if suite and persona not in names:
            raise UnknownScenarioError(suite, [p for p in names if p.startswith(persona[:1])])
        lib_ids = [q for q in ids if self._matches_lib(q)]
        other_ids = [q for q in ids if q not in lib_ids]
        out: list[AnyScenario] = []
        if persona and persona != "sre":  # (SRE's are all twin files: the registry selects them below)
            mine = self._library(persona)
            # and the persona's twin scenario files (FinOps' cost incidents, ``scenarios/finops/*.yaml``)
            twin_side = [s for s in self.sre.all() if s.persona == persona]
            twin_ids = [q for q in ids if any(_hits(s, q) for s in twin_side)]
            lib_ids = [q for q in lib_ids if any(_hits(s, q) for s in mine)]
            stray = [q for q in ids if q not in twin_ids and q not in lib_ids]
            if stray:
                raise ScenarioSelectionError(
                    f"{', '.join(repr(q) for q in stray)} not in suite {suite!r}: --scenario narrows "
                    "--suite (drop --suite to run scenarios of any suite)"
                )
            pool = [s for s in mine if not suite_tag or suite_tag in _tags(s)]
            out.extend(self._pick(pool, lib_ids) if lib_ids else ([] if twin_ids else pool))  # ids narrow
            twins = [s for s in twin_side if not suite_tag or suite_tag in s.tags]
            if twin_ids:
                out.extend(s for s in twins if any(_hits(s, q) for q in twin_ids))
            elif not lib_ids:
                out.extend(twins)
            if ids and not out:
                raise ScenarioSelectionError(f"no scenario of suite {suite!r} matches {', '.join(ids)}")
        elif suite:
            if lib_ids:
                raise ScenarioSelectionError(
                    f"{', '.join(repr(q) for q in lib_ids)} not in suite {suite!r}: --scenario narrows "
                    "--suite (drop --suite to run scenarios of any suite)"
                )
            out.extend(self.sre.select(ids=other_ids, suite=suite))
        else:
            if other_ids or not ids:
                out.extend(self.sre.select(ids=other_ids))
            if lib_ids or not ids:
                out += self._pick(self._library(), lib_ids) if lib_ids else self._library()
        want = set(tags)
        return sorted((s for s in out if want <= _tags(s)), key=lambda s: s.id)

    def _matches_lib(self, q: str) -> bool:
        return any(_hits(s, q) for s in self._library())

    def _pick(self, pool: list[LibraryScenario], queries: list[str]) -> list[LibraryScenario]:
        return [s for s in pool if any(_hits(s, q) for q in queries)]


def _hits(s: AnyScenario, q: str) -> bool:
    """``q`` names ``s`` (a twin scenario file or a library scenario): its id, its bare name, or a
    glob over either."""
    return (
        s.id in (q, f"{s.persona}/{q}") or fnmatch.fnmatchcase(s.id, q) or fnmatch.fnmatchcase(s.id, "*/" + q)
    )


def _tags(s: AnyScenario) -> set[str]:
    return set(s.tags) if isinstance(s, Scenario) else get_persona(s.persona).tags(s)
