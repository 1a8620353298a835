"""Every persona's scenarios behind one lookup, for the harness: the SRE registry
(``scenario/registry.py``), the CISO library (``personas/ciso/library.py``) and the FinOps library
(``personas/finops/library.py``).

``get`` and ``select`` answer as the SRE registry does (exact ids, bare names, globs, ``--suite
persona[:tag]``, tags); a suite or id of another persona is looked up in that persona's library.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..personas.ciso.library import ciso_library
from ..personas.ciso.spec import CisoScenario
from ..personas.finops.anomaly_spec import AnomalyScenario
from ..personas.finops.library import finops_library
from ..scenario.registry import PERSONAS, ScenarioRegistry, ScenarioSelectionError, UnknownScenarioError
from ..scenario.spec import Scenario

AnyScenario = Scenario | CisoScenario | AnomalyScenario
LibraryScenario = CisoScenario | AnomalyScenario
"""A scenario of a persona library (``personas/<persona>/library.py``): an id, a class, tags."""


class ScenarioLookup(Protocol):
    """What planning a run needs: an id's scenario (a :class:`Catalogue`, or the SRE registry alone)."""

    def get(self, sid: str) -> AnyScenario: ...


@dataclass
class Catalogue:
    sre: ScenarioRegistry
    ciso: list[CisoScenario] = field(default_factory=list)
    finops: list[AnomalyScenario] = field(default_factory=list)

    @classmethod
    def default(cls) -> Catalogue:
        """The SRE registry's folders (library, plug-ins, ``--scenarios-dir``), the CISO scenarios
        under their ``ciso/<class>/`` folders and the FinOps ones under ``finops/<class>/``."""
        return cls(ScenarioRegistry.default(), ciso_library(), finops_library())

    def _library(self, persona: str | None = None) -> list[LibraryScenario]:
        out: list[LibraryScenario] = []
        if persona in (None, "ciso"):
            out.extend(self.ciso)
        if persona in (None, "finops"):
            out.extend(self.finops)
        return out

    def _lib_by_id(self) -> dict[str, LibraryScenario]:
        return {s.id: s for s in self._library()}

    def ids(self) -> list[str]:
        return sorted([*self.sre.ids(), *self._lib_by_id()])

    def get(self, sid: str) -> AnyScenario:
        by_id = self._lib_by_id()
        for cand in (sid, f"ciso/{sid}", f"finops/{sid}"):
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
        """As :meth:`ScenarioRegistry.select`, over every persona. CISO and FinOps scenarios are
        tagged by their tags, their class (``kyverno``, ``kyverno-update``, ``anomaly``) and (CISO)
        their CIS ids."""
        ids, tags = list(ids), list(tags)
        persona, _, suite_tag = (suite or "").partition(":")
        if suite and persona not in PERSONAS:
            raise UnknownScenarioError(suite, [p for p in PERSONAS if p.startswith(persona[:1])])
        lib_ids = [q for q in ids if self._matches_lib(q)]
        other_ids = [q for q in ids if q not in lib_ids]
        out: list[AnyScenario] = []
        if persona in ("ciso", "finops"):
            mine = self._library(persona)
            # FinOps on the twin: scenario files of the SRE format (``scenarios/finops/*.yaml``)
            twin_side = [s for s in self.sre.all() if s.persona == persona]
            twin_ids = [q for q in ids if any(_sre_hits(s, q) for s in twin_side)]
            lib_ids = [q for q in lib_ids if any(_hits(s, q) for s in mine)]
            stray = [q for q in ids if q not in twin_ids and q not in lib_ids]
            if stray:
                raise ScenarioSelectionError(
                    f"{', '.join(repr(q) for q in stray)} not in suite {suite!r}: --scenario narrows "
                    "--suite (drop --suite to run scenarios of any suite)"
                )
            pool = [s for s in mine if not suite_tag or suite_tag in _lib_tags(s)]
            out.extend(self._pick(pool, lib_ids) if lib_ids else ([] if twin_ids else pool))  # ids narrow
            twins = [s for s in twin_side if not suite_tag or suite_tag in s.tags]
            if twin_ids:
                out.extend(s for s in twins if any(_sre_hits(s, q) for q in twin_ids))
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


def _hits(s: LibraryScenario, q: str) -> bool:
    """``q`` names ``s``: its id, its bare name, or a glob over either."""
    return (
        s.id in (q, f"{s.persona}/{q}") or fnmatch.fnmatchcase(s.id, q) or fnmatch.fnmatchcase(s.id, "*/" + q)
    )


def _sre_hits(s: Scenario, q: str) -> bool:
    """``q`` names a scenario of the SRE format: its id, its bare name, or a glob over either."""
    return (
        s.id in (q, f"{s.persona}/{q}") or fnmatch.fnmatchcase(s.id, q) or fnmatch.fnmatchcase(s.id, "*/" + q)
    )


def _lib_tags(s: LibraryScenario) -> set[str]:
    if isinstance(s, CisoScenario):
        return {*s.tags, s.task_class, *s.cis}
    return {*s.tags, s.task_class}


def _tags(s: AnyScenario) -> set[str]:
    return _lib_tags(s) if isinstance(s, CisoScenario | AnomalyScenario) else set(s.tags)
