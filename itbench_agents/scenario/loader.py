"""Load scenario YAML files; every error names the file, the line and the field.

    scenario = load_scenario("scenarios/sre/ad-failure-flag-v1.yaml")

A broken file raises :class:`ScenarioLoadError`, whose message reads like
``scenarios/sre/x.yaml:12: faults[0].target.name: Field required``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from .spec import Scenario


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class ScenarioLoadError(ValueError):
    """A scenario file that cannot be loaded; ``problems`` lists each (file, line, field, message)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _op_of(node: yaml.MappingNode) -> str | None:
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == "op" and isinstance(v, yaml.ScalarNode):
            return str(v.value)
    return None


def _line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (or of its nearest existing ancestor)."""
    node = root
    if node is None:
        return None
    line = node.start_mark.line + 1
    prev: Any = None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(prev, int) and _op_of(node) == part:
            prev = part  # the discriminated union's tag (e.g. "patch"), not a field of that name
            continue
        prev = part
        if isinstance(node, yaml.MappingNode):
            found = None
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    found = (k, v)
                    break
            if found is None:
                # pydantic inserts the union tag (e.g. "patch") into the location; skip it
                continue
            node = found[1]
            line = found[0].start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_scenario(text: str, file: str = "<string>") -> Scenario:
    return parse_model(text, Scenario, file)


M = TypeVar("M", bound=BaseModel)


def parse_model(text: str, model: type[M], file: str = "<string>") -> M:
    """A YAML mapping validated as ``model`` (any persona's scenario schema); ``ScenarioLoadError``
    naming file, line and field for each problem."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader (libyaml when available)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ScenarioLoadError(
            [Problem(file, line, "", f"not valid YAML: {getattr(e, 'problem', e)}")]
        ) from e
    if not isinstance(data, dict):
        raise ScenarioLoadError([Problem(file, 1, "", "a scenario file is a YAML mapping")])
    try:
        return model.model_validate(data)
    except ValidationError as e:
        root = yaml.compose(text, Loader=_Loader)  # only now: node marks give the lines
        problems = []
        for err in e.errors():
            loc = tuple(err["loc"])
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown field"
            elif err["type"] == "union_tag_invalid":
                msg = f"unknown op {err.get('input', {}).get('op')!r}; expected one of create, patch, delete, flag, restart"
            problems.append(Problem(file, _line_of(root, loc), _field_path(loc), msg))
        raise ScenarioLoadError(problems) from None


def load_scenario(path: str | Path) -> Scenario:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ScenarioLoadError([Problem(str(p), None, "", f"cannot read: {e.strerror}")]) from e
    return parse_scenario(text, str(p))
