"""Loads the FinOps scenarios: ``scenarios/finops/anomaly/*.yaml`` (and a user's folders laid out
alike). File name = id (``finops/<file stem>``); errors name the file, the line and the field."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from ...paths import scenarios_dir
from .anomaly_spec import AnomalyScenario


class FinopsLibraryError(ValueError):
    pass


def load_anomaly(path: Path) -> AnomalyScenario:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise FinopsLibraryError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise FinopsLibraryError(f"{path}: a scenario is a mapping")
    try:
        sc = AnomalyScenario.model_validate(raw)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            where = ".".join(str(x) for x in err["loc"]) or "(scenario)"
            lines.append(f"{path}: {where}: {str(err['msg']).removeprefix('Value error, ')}")
        raise FinopsLibraryError("\n".join(lines)) from None
    if sc.id != f"finops/{path.stem}":
        raise FinopsLibraryError(f"{path}: id {sc.id!r} must be finops/{path.stem} (the file's name)")
    return sc


def load_folder(folder: Path) -> list[AnomalyScenario]:
    return [load_anomaly(p) for p in sorted(folder.glob("*.yaml"))]


@lru_cache(maxsize=4)
def _cached(roots: tuple[str, ...]) -> tuple[AnomalyScenario, ...]:
    out: dict[str, AnomalyScenario] = {}
    for root in roots:
        for sc in load_folder(Path(root)):
            if sc.id in out:
                raise FinopsLibraryError(f"{root}: scenario {sc.id} is defined twice")
            out[sc.id] = sc
    return tuple(sorted(out.values(), key=lambda s: s.id))


def finops_library(extra: Iterable[Path] = ()) -> list[AnomalyScenario]:
    """Every FinOps scenario: the package's, then those of ``extra`` folders (``anomaly/`` inside)."""
    roots = [scenarios_dir() / "finops" / "anomaly"]
    roots += [Path(p) / "anomaly" if (Path(p) / "anomaly").is_dir() else Path(p) for p in extra]
    return list(_cached(tuple(str(r) for r in roots if r.is_dir())))
