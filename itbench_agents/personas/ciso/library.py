"""The CISO scenario library: ``scenarios/ciso/<class>/*.yaml`` (file name = the id's name), plus
the same layout in the user's scenario folders. Errors name file, line and field."""

from __future__ import annotations

from pathlib import Path

from ...scenario.loader import Problem, ScenarioLoadError, parse_model
from .spec import CisoScenario


def ciso_dirs() -> list[Path]:
    from ...paths import scenarios_dir
    from ...scenario.registry import extra_scenario_dirs

    return [d / "ciso" for d in (scenarios_dir(), *extra_scenario_dirs()) if (d / "ciso").is_dir()]


def load_ciso(path: Path) -> CisoScenario:
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioLoadError([Problem(str(path), None, "", f"cannot read: {e.strerror}")]) from e
    scenario = parse_model(text, CisoScenario, str(path))
    if scenario.id.split("/", 1)[1] != path.stem:
        raise ScenarioLoadError(
            [Problem(str(path), 1, "id", f"file name must be the id's name ({scenario.id})")]
        )
    if path.parent.name != scenario.task_class:
        raise ScenarioLoadError(
            [
                Problem(
                    str(path),
                    1,
                    "class",
                    f"a {scenario.task_class} scenario lives in ciso/{scenario.task_class}/",
                )
            ]
        )
    return scenario


def ciso_library() -> list[CisoScenario]:
    problems: list[Problem] = []
    found: dict[str, CisoScenario] = {}
    for root in ciso_dirs():
        for f in sorted(root.glob("*/*.yaml")):
            try:
                s = load_ciso(f)
            except ScenarioLoadError as e:
                problems.extend(e.problems)
                continue
            if s.id in found:
                problems.append(Problem(str(f), None, "id", f"duplicate id {s.id}"))
            found[s.id] = s
    if problems:
        raise ScenarioLoadError(problems)
    return [found[k] for k in sorted(found)]
