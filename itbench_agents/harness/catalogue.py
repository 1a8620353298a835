"""Every persona's scenarios behind one lookup, for the harness: the SRE registry
(``scenario/registry.py``) and the CISO library (``personas/ciso/library.py``).

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
from ..scenario.registry import PERSONAS, ScenarioRegistry, ScenarioSelectionError, UnknownScenarioError
from ..scenario.spec import Scenario

AnyScenario = Scenario | CisoScenario


class ScenarioLookup(Protocol):
    """What planning a run needs: an id's scenario (a :class:`Catalogue`, or the SRE registry alone)."""

    def get(self, sid: str) -> AnyScenario: ...


@dataclass
class Catalogue:
    sre: ScenarioRegistry
    ciso: list[CisoScenario] = field(default_factory=list)

    @classmethod
    def default(cls) -> Catalogue:
        """The SRE registry's folders (library, plug-ins, ``--scenarios-dir``) and the CISO
        scenarios under their ``ciso/<class>/`` folders."""
        return cls(ScenarioRegistry.default(), ciso_library())

    def _ciso_by_id(self) -> dict[str, CisoScenario]:
        return {s.id: s for s in self.ciso}

    def ids(self) -> list[str]:
        return sorted([*self.sre.ids(), *self._ciso_by_id()])

    def get(self, sid: str) -> AnyScenario:
        by_id = self._ciso_by_id()
        if sid in by_id or f"ciso/{sid}" in by_id:
            return by_id.get(sid) or by_id[f"ciso/{sid}"]
        try:
            return self.sre.get(sid)
        except UnknownScenarioError:
            import difflib

            close = difflib.get_close_matches(sid, self.ids(), n=3, cutoff=0.5)
            raise UnknownScenarioError(sid, close or self.sre.suggest(sid)) from None

    def select(
        self, ids: Iterable[str] = (), suite: str | None = None, tags: Iterable[str] = ()
    ) -> list[AnyScenario]:
        """As :meth:`ScenarioRegistry.select`, over every persona. CISO scenarios are tagged by
        their tags, their class (``kyverno``, ``kyverno-update``) and their CIS ids."""
        ids, tags = list(ids), list(tags)
        persona, _, suite_tag = (suite or "").partition(":")
        if suite and persona not in PERSONAS:
            raise UnknownScenarioError(suite, [p for p in PERSONAS if p.startswith(persona[:1])])
        ciso_ids = [q for q in ids if self._matches_ciso(q)]
        other_ids = [q for q in ids if q not in ciso_ids]
        out: list[AnyScenario] = []
        if persona == "ciso":
            if other_ids:
                raise ScenarioSelectionError(
                    f"{', '.join(repr(q) for q in other_ids)} not in suite {suite!r}: --scenario narrows "
                    "--suite (drop --suite to run scenarios of any suite)"
                )
            pool = [s for s in self.ciso if not suite_tag or suite_tag in _ciso_tags(s)]
            out.extend(self._pick_ciso(pool, ciso_ids) if ciso_ids else pool)
            if ids and not out:
                raise ScenarioSelectionError(f"no scenario of suite {suite!r} matches {', '.join(ids)}")
        elif suite:
            if ciso_ids:
                raise ScenarioSelectionError(
                    f"{', '.join(repr(q) for q in ciso_ids)} not in suite {suite!r}: --scenario narrows "
                    "--suite (drop --suite to run scenarios of any suite)"
                )
            out.extend(self.sre.select(ids=other_ids, suite=suite))
        else:
            if other_ids or not ids:
                out.extend(self.sre.select(ids=other_ids))
            if ciso_ids or not ids:
                out += self._pick_ciso(self.ciso, ciso_ids) if ciso_ids else self.ciso
        want = set(tags)
        return sorted((s for s in out if want <= _tags(s)), key=lambda s: s.id)

    def _matches_ciso(self, q: str) -> bool:
        return any(_hits(s, q) for s in self.ciso)

    def _pick_ciso(self, pool: list[CisoScenario], queries: list[str]) -> list[CisoScenario]:
        return [s for s in pool if any(_hits(s, q) for q in queries)]


def _hits(s: CisoScenario, q: str) -> bool:
    """``q`` names ``s``: its id, its bare name, or a glob over either."""
    return s.id in (q, f"ciso/{q}") or fnmatch.fnmatchcase(s.id, q) or fnmatch.fnmatchcase(s.id, "*/" + q)


def _ciso_tags(s: CisoScenario) -> set[str]:
    return {*s.tags, s.task_class, *s.cis}


def _tags(s: AnyScenario) -> set[str]:
    return _ciso_tags(s) if isinstance(s, CisoScenario) else set(s.tags)
