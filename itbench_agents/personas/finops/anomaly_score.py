"""Scoring an anomaly answer: ITBench-Lite's ``root_cause_resource`` (1 when every ground-truth
resource is named with its type), and precision, recall and F1 over the resources named, so that
the paper's F1 can be compared. Names match exactly after trimming; types match ignoring case,
spaces and underscores and the aliases an analyst would use (``instance family``, ``service``,
``account``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TYPE_ALIASES = {
    "instancefamily": "Instance_Family",
    "family": "Instance_Family",
    "application": "Application",
    "app": "Application",
    "cloudservice": "Cloud_Service",
    "service": "Cloud_Service",
    "csp": "CSP",
    "cloud": "CSP",
    "provider": "CSP",
    "accountid": "Account ID",
    "account": "Account ID",
}
MAX_RESOURCES = 50


class AnswerError(ValueError):
    """An answer that is not ``{"resource": [{"name", "type"}]}``: scored zero with this reason."""


@dataclass(frozen=True)
class AnomalyScore:
    root_cause_resource: float
    """ITBench-Lite's metric: every ground-truth resource named (however many others are)."""
    precision: float
    recall: float
    f1: float
    named: int
    pinpointed: float = 0.0
    """Ours, the pass/fail column: every ground-truth resource named and at least half of the
    resources named right — naming everything in the bill (which ``root_cause_resource`` rewards)
    does not pass."""
    reason: str = ""


def canonical_type(t: str) -> str:
    key = "".join(ch for ch in t.lower() if ch.isalnum())
    return TYPE_ALIASES.get(key, t.strip())


def parse_answer(raw: Any) -> list[tuple[str, str]]:
    """The (name, canonical type) pairs of an answer (a dict or its JSON text)."""
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise AnswerError(f"the answer is not JSON: {e}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("resource"), list):
        raise AnswerError('expected {"resource": [{"name": ..., "type": ...}]}')
    items = raw["resource"]
    if len(items) > MAX_RESOURCES:
        raise AnswerError(f"{len(items)} resources named; at most {MAX_RESOURCES} are read")
    out: list[tuple[str, str]] = []
    for i, it in enumerate(items):
        if (
            not isinstance(it, dict)
            or not isinstance(it.get("name"), str)
            or not isinstance(it.get("type"), str)
        ):
            raise AnswerError(f"resource[{i}] must have string fields name and type")
        pair = (it["name"].strip(), canonical_type(it["type"]))
        if pair not in out:
            out.append(pair)
    return out


def score_answer(raw: Any, truth: list[dict[str, str]]) -> AnomalyScore:
    want = {(t["name"].strip(), canonical_type(t["type"])) for t in truth}
    try:
        got = parse_answer(raw)
    except AnswerError as e:
        return AnomalyScore(0.0, 0.0, 0.0, 0.0, 0, 0.0, str(e))
    hits = sum(1 for g in got if g in want)
    precision = hits / len(got) if got else 0.0
    recall = hits / len(want) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    root = 1.0 if want and want <= set(got) else 0.0
    return AnomalyScore(root, precision, recall, f1, len(got), 1.0 if root and precision >= 0.5 else 0.0)
