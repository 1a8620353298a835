"""The scenario registry: every scenario file under a folder, selectable by id, glob, suite or tag.

reg = ScenarioRegistry.default()            # scenarios/sre/*.yaml (+ ciso/, finops/ when present,
                                            # + installed plug-ins' itbench_agents.scenarios folders,
                                            # + the folders of ITBENCH_SCENARIO_PATH)
reg.get("sre/ad-failure-flag-v1")
reg.select(ids=["sre/*-flag-*"], tags=["flagd"])
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..paths import scenarios_dir
from .loader import Problem, ScenarioLoadError, load_scenario
from .spec import Scenario

PERSONAS = ("sre", "ciso", "finops")


class UnknownScenarioError(KeyError):
    def __init__(self, query: str, suggestions: list[str]) -> None:
        self.query = query
        self.suggestions = suggestions
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown scenario {query!r}{hint} (see `itbench scenarios list`)")

    def __str__(self) -> str:
        return str(self.args[0])


SCENARIO_PATH_ENV = "ITBENCH_SCENARIO_PATH"
"""Folders of your own scenarios, separated like ``PATH`` (``os.pathsep``), loaded beside the
package's library; ``--scenarios-dir`` adds to it."""


def extra_scenario_dirs() -> list[Path]:
    raw = os.environ.get(SCENARIO_PATH_ENV, "")
    return [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p.strip()]


def add_scenario_dirs(dirs: Sequence[str | Path]) -> list[str]:
    """Put ``dirs`` on ``ITBENCH_SCENARIO_PATH`` for this process and the processes it starts;
    returns every extra folder now on it (absolute)."""
    have = [str(p) for p in extra_scenario_dirs()]
    for d in dirs:
        p = str(Path(d).expanduser().resolve())
        if p not in have:
            have.append(p)
    if have:
        os.environ[SCENARIO_PATH_ENV] = os.pathsep.join(have)
    return have


def plugin_scenario_dirs() -> tuple[list[Path], list[Problem]]:
    """The folders installed packages declare as ``itbench_agents.scenarios`` entry points: a
    package (its folder), a path, or a callable returning one; and what is wrong with the others."""
    from ..plugins import SCENARIOS_GROUP, PluginError, plugins

    dirs: list[Path] = []
    problems: list[Problem] = []
    for p in plugins(SCENARIOS_GROUP):
        try:
            obj = p.load()
        except PluginError as exc:
            problems.append(Problem(p.distribution, None, SCENARIOS_GROUP, str(exc)))
            continue
        if callable(obj):
            obj = obj()
        if isinstance(obj, str | Path):
            folder = Path(obj)
        elif getattr(obj, "__path__", None):  # a package: its own folder
            folder = Path(next(iter(obj.__path__)))  # type: ignore[attr-defined]
        elif getattr(obj, "__file__", None):
            folder = Path(obj.__file__).parent  # type: ignore[attr-defined]
        else:
            problems.append(
                Problem(p.distribution, None, SCENARIOS_GROUP, f"{p.name} = {p.value!r} names no folder")
            )
            continue
        dirs.append(folder.resolve())
    return dirs, problems


class ScenarioSelectionError(ValueError):
    """A selection that contradicts itself (an id outside the suite it is meant to narrow)."""


class ScenarioRegistry:
    def __init__(self, scenarios: Iterable[Scenario], files: dict[str, Path] | None = None) -> None:
        self._by_id: dict[str, Scenario] = {}
        self.files: dict[str, Path] = dict(files or {})
        for s in scenarios:
            if s.id in self._by_id:
                raise ScenarioLoadError(
                    [Problem(str(self.files.get(s.id, "?")), None, "id", f"duplicate id {s.id}")]
                )
            self._by_id[s.id] = s

    @classmethod
    def from_dir(cls, root: str | Path) -> ScenarioRegistry:
        """The scenarios of a library folder: ``<root>/<persona>/*.yaml``."""
        return cls.from_dirs([Path(root)], flat=False)

    @classmethod
    def from_dirs(cls, roots: Sequence[Path], flat: bool = True) -> ScenarioRegistry:
        """The scenarios of several folders, each laid out like the library
        (``<root>/<persona>/*.yaml``) or, with ``flat``, holding scenario files itself; an id
        defined twice, in one folder or across them, is an error naming both files."""
        scenarios: list[Scenario] = []
        files: dict[str, Path] = {}
        problems: list[Problem] = []
        seen: dict[str, Path] = {}
        paths: list[Path] = []
        for root in dict.fromkeys(roots):  # a folder named twice (plug-in and env) loads once
            if not root.is_dir():
                problems.append(Problem(str(root), None, SCENARIO_PATH_ENV, "no such scenario folder"))
                continue
            for persona in PERSONAS:
                if (root / persona).is_dir():
                    paths.extend(sorted((root / persona).glob("*.yaml")))
            if flat and root != scenarios_dir():
                paths.extend(sorted(root.glob("*.yaml")))
        for f in paths:
            try:
                s = load_scenario(f)
            except ScenarioLoadError as e:
                problems.extend(e.problems)
                continue
            if s.id in seen:
                problems.append(Problem(str(f), None, "id", f"duplicate id {s.id} (also in {seen[s.id]})"))
                continue
            seen[s.id] = f
            scenarios.append(s)
            files[s.id] = f
        if problems:
            raise ScenarioLoadError(problems)
        return cls(scenarios, files)

    @classmethod
    def default(cls) -> ScenarioRegistry:
        """The package's library, installed plug-ins' scenario folders, and the folders of
        ``ITBENCH_SCENARIO_PATH`` (``--scenarios-dir``)."""
        plugin_dirs, problems = plugin_scenario_dirs()
        if problems:
            raise ScenarioLoadError(problems)
        return cls.from_dirs([scenarios_dir(), *plugin_dirs, *extra_scenario_dirs()])

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, sid: object) -> bool:
        return sid in self._by_id

    def all(self) -> list[Scenario]:
        return [self._by_id[k] for k in sorted(self._by_id)]

    def ids(self) -> list[str]:
        return sorted(self._by_id)

    def get(self, sid: str) -> Scenario:
        if sid in self._by_id:
            return self._by_id[sid]
        # accept a bare name without persona prefix
        for persona in PERSONAS:
            if f"{persona}/{sid}" in self._by_id:
                return self._by_id[f"{persona}/{sid}"]
        raise UnknownScenarioError(sid, self.suggest(sid))

    def suggest(self, query: str, n: int = 3) -> list[str]:
        ids = self.ids()
        close = difflib.get_close_matches(query, ids, n=n, cutoff=0.5)
        if not close:
            bare = {i.split("/", 1)[1]: i for i in ids}
            close = [
                bare[b] for b in difflib.get_close_matches(query.split("/")[-1], list(bare), n=n, cutoff=0.4)
            ]
        return close

    def select(
        self,
        ids: Iterable[str] = (),
        suite: str | None = None,
        tags: Iterable[str] = (),
        include_controls: bool = True,
    ) -> list[Scenario]:
        """Scenarios matching any of ``ids`` (exact ids or globs), or in a ``suite`` (persona or
        ``persona:tag``); with both, ``ids`` narrow the suite (an id outside it is an error, a glob
        keeps what falls inside it); then those carrying every tag in ``tags``."""
        chosen: dict[str, Scenario] = {}
        ids = list(ids)
        for q in ids:
            if any(ch in q for ch in "*?["):
                hits = [
                    s
                    for s in self.all()
                    if fnmatch.fnmatchcase(s.id, q) or fnmatch.fnmatchcase(s.id, "*/" + q)
                ]
                if not hits:
                    raise UnknownScenarioError(q, self.suggest(q.replace("*", "")))
                for s in hits:
                    chosen[s.id] = s
            else:
                s = self.get(q)
                chosen[s.id] = s
        if suite:
            persona, _, tag = suite.partition(":")
            if persona not in PERSONAS:
                raise UnknownScenarioError(suite, [p for p in PERSONAS if p.startswith(persona[:1])])
            in_suite = {s.id: s for s in self.all() if s.persona == persona and (not tag or tag in s.tags)}
            if ids:
                outside = [
                    q for q in ids if not any(ch in q for ch in "*?[") and self.get(q).id not in in_suite
                ]
                if outside:
                    raise ScenarioSelectionError(
                        f"{', '.join(repr(q) for q in outside)} not in suite {suite!r}: --scenario narrows "
                        "--suite (drop --suite to run scenarios of any suite)"
                    )
                chosen = {k: v for k, v in chosen.items() if k in in_suite}
                if not chosen:
                    raise ScenarioSelectionError(f"no scenario of suite {suite!r} matches {', '.join(ids)}")
            else:
                chosen = in_suite
        if not ids and not suite:
            chosen = {s.id: s for s in self.all()}
        want = set(tags)
        out = [s for s in sorted(chosen.values(), key=lambda s: s.id) if want <= set(s.tags)]
        if not include_controls:
            out = [s for s in out if not s.control]
        return out
