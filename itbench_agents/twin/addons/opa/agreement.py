"""How often the twin's Rego engine (regorus) answers what real OPA answers, on a corpus of policies
and inputs (``itbench opa agreement DIR``; CI prints it for ``tests/twin/addons/opa/agreement/``).

The reference is OPA itself, embedded: the Go library of ``opa-golib-python-bindings`` (OPA v1.20),
whose wheel declares Python ≥ 3.14 although it is plain ctypes, so it cannot be a dependency of this
project; ``.ci/run`` downloads it into ``~/.cache/itbench/opa-bindings`` (or set
``ITBENCH_OPA_BINDINGS`` to a folder holding its ``opa_bindings`` package).

A corpus file is YAML: ``cases:`` a list of ``name``, ``about``, ``modules`` (file name → Rego),
``inputs`` (label → input document; a ``null`` input means no input), optional ``data``, ``query``
(default ``data.check.result``) and ``known_difference`` — the documented reason the engines differ
on that case. Outcomes compare as values (equal JSON), ``undefined``, or errors of one class
(``compile``: OPA refuses the policy; ``eval``: evaluation fails).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .engine import RegoEngine, RegoError

BINDINGS_ENV = "ITBENCH_OPA_BINDINGS"
DEFAULT_BINDINGS = Path.home() / ".cache" / "itbench" / "opa-bindings"
_DATA_REF = re.compile(r"^data(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class AgreementCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    about: str = ""
    modules: dict[str, str] = Field(default_factory=dict)
    inputs: dict[str, Any] = Field(default_factory=lambda: {"-": None})
    data: dict[str, Any] | None = None
    query: str = "data.check.result"
    known_difference: str | None = None


class AgreementFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cases: list[AgreementCase]


def load_corpus(folder: Path) -> list[AgreementCase]:
    """Every case of the ``*.yaml`` files under ``folder``; ``ValueError`` naming file and field."""
    cases: list[AgreementCase] = []
    for f in sorted(folder.rglob("*.yaml")):
        try:
            cases.extend(AgreementFile.model_validate(yaml.safe_load(f.read_text())).cases)
        except ValidationError as e:
            raise ValueError(f"{f}: {e}") from e
    names = [c.name for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{folder}: case names used twice: {', '.join(dupes)}")
    return cases


@dataclass(frozen=True)
class Outcome:
    kind: Literal["value", "undefined", "error"]
    value: Any = None
    detail: str = ""

    def key(self) -> tuple[str, str]:
        if self.kind == "value":
            return ("value", json.dumps(self.value, sort_keys=True))
        if self.kind == "error":
            return ("error", str(self.value))
        return ("undefined", "")

    def __str__(self) -> str:
        if self.kind == "value":
            text = json.dumps(self.value, sort_keys=True)
            return text if len(text) <= 40 else text[:37] + "..."
        if self.kind == "error":
            return f"{self.value} error"
        return "undefined"


class Evaluator(Protocol):
    name: str

    def outcome(self, case: AgreementCase, input: Any) -> Outcome: ...  # noqa: A002


class TwinEngine:
    """The twin's engine (``engine.py``)."""

    name = "twin (regorus)"

    def __init__(self, engine: RegoEngine | None = None) -> None:
        self.engine = engine or RegoEngine()

    def outcome(self, case: AgreementCase, input: Any) -> Outcome:  # noqa: A002
        try:
            if input is None:
                r = self.engine.evaluate(case.modules, case.query, data=case.data)
            else:
                r = self.engine.evaluate(case.modules, case.query, input=input, data=case.data)
        except RegoError as e:
            return Outcome("error", "compile" if e.compile_time else "eval", str(e))
        return Outcome("value", r.value) if r.defined else Outcome("undefined")


class GoOpa:
    """Real OPA, embedded through ``opa_bindings`` (one engine per case: modules do not leak)."""

    def __init__(self, folder: Path) -> None:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        import opa_bindings  # type: ignore[import-not-found]

        self._mod = opa_bindings
        self.name = f"OPA (Go, {folder.name})"

    def outcome(self, case: AgreementCase, input: Any) -> Outcome:  # noqa: A002
        OpaError, OpaUndefinedError = self._mod.OpaError, self._mod.OpaUndefinedError  # noqa: N806
        engine = self._mod.OpaEngine()
        try:
            for name, text in case.modules.items():
                engine.add_policy(name, text)
            if case.data:
                engine.add_data(case.data)
            if _DATA_REF.match(case.query):
                value = engine.eval_document(case.query[len("data.") :], input)
                return Outcome("value", value)
            rows = engine.eval_query(case.query, input)
            return Outcome("value", rows) if rows else Outcome("undefined")
        except OpaUndefinedError:
            return Outcome("undefined")
        except OpaError as e:
            kind = "eval" if e.code == "eval_error" else "compile"
            return Outcome("error", kind, f"{e.code}: {e.message}")
        finally:
            engine.close()


def find_reference(folder: str | Path | None = None) -> GoOpa | None:
    """Real OPA from ``folder``, ``$ITBENCH_OPA_BINDINGS`` or ``~/.cache/itbench/opa-bindings``;
    None when none of them holds ``opa_bindings``."""
    for cand in (folder, os.environ.get(BINDINGS_ENV), DEFAULT_BINDINGS):
        if cand and (Path(cand) / "opa_bindings" / "__init__.py").is_file():
            return GoOpa(Path(cand))
    return None


@dataclass(frozen=True)
class Row:
    case: AgreementCase
    input_label: str
    ours: Outcome
    theirs: Outcome

    @property
    def agree(self) -> bool:
        return self.ours.key() == self.theirs.key()

    @property
    def verdict(self) -> str:
        """``agree``; ``documented`` (a difference the corpus explains); ``UNEXPECTED`` (an
        undocumented difference)."""
        if self.agree:
            return "agree"
        return "documented" if self.case.known_difference is not None else "UNEXPECTED"


def compare(cases: Iterable[AgreementCase], ours: Evaluator, theirs: Evaluator) -> list[Row]:
    rows = []
    for case in cases:
        for label, input in case.inputs.items():  # noqa: A001
            rows.append(Row(case, label, ours.outcome(case, input), theirs.outcome(case, input)))
    return rows


def stale_cases(rows: list[Row]) -> list[str]:
    """Cases documented as differing on which the engines now agree for every input."""
    documented = {r.case.name for r in rows if r.case.known_difference is not None}
    differing = {r.case.name for r in rows if not r.agree}
    return sorted(documented - differing)


def summary(rows: list[Row]) -> dict[str, int]:
    out = {"comparisons": len(rows), "agree": 0, "documented": 0, "UNEXPECTED": 0}
    for r in rows:
        out[r.verdict] += 1
    out["cases"] = len({r.case.name for r in rows})
    out["STALE"] = len(stale_cases(rows))
    return out
