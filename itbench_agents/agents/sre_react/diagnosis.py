"""Parse and validate the diagnosis the model writes (ITBench-Lite's agent_output.json contract)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from ...core.output import Diagnosis

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)
_ENTITY = re.compile(r"^[^/\s]+/[A-Za-z][A-Za-z0-9]*/[^/\s]+$")


class DiagnosisParseError(ValueError):
    def __init__(self, message: str, *, not_json: bool) -> None:
        super().__init__(message)
        self.not_json = not_json


def extract_json(text: str) -> Any:
    m = _FENCE.search(text)
    candidates = [m.group(1)] if m else []
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for c in candidates:
        try:
            return json.loads(c)
        except json.JSONDecodeError:
            continue
    raise DiagnosisParseError("the reply is not a JSON object", not_json=True)


def parse_diagnosis(text: str) -> Diagnosis:
    """The diagnosis in a reply; ``"entities": []`` is a valid "no incident" report."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise DiagnosisParseError("the JSON is not an object", not_json=False)
    try:
        diag = Diagnosis.model_validate(data)
    except ValidationError as exc:
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise DiagnosisParseError(f"the JSON does not match the schema: {detail}", not_json=False) from None
    if not diag.entities:  # "no incident": what the goal asks for when nothing is wrong
        return diag
    bad = [e.name for e in diag.entities if not _ENTITY.match(e.name)]
    if bad:
        raise DiagnosisParseError(
            f"entity names must look like namespace/Kind/name, got: {', '.join(bad[:5])}", not_json=False
        )
    if not any(e.contributing_factor for e in diag.entities):
        raise DiagnosisParseError(
            'mark the root cause with "contributing_factor": true (or, if nothing is wrong, reply with "entities": [])',
            not_json=False,
        )
    return diag
