"""Label selectors (``matchLabels`` + ``matchExpressions``) and node-selector terms, as controllers
and the scheduler evaluate them."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def labels_of(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def match_expression(labels: dict[str, str], expr: Obj) -> bool:
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    """A ``LabelSelector``; an empty selector matches everything, None matches nothing."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    return all(match_expression(labels, e) for e in selector.get("matchExpressions") or [])


def matches_map(selector: dict[str, str] | None, labels: dict[str, str]) -> bool:
    """A plain map selector (Service ``spec.selector``, ``nodeSelector``)."""
    if not selector:
        return False
    return all(labels.get(k) == v for k, v in selector.items())


def node_selector_term_matches(term: Obj, node: Obj) -> bool:
    labels = labels_of(node)
    for e in term.get("matchExpressions") or []:
        if not match_expression(labels, e):
            return False
    fields = {"metadata.name": node.get("metadata", {}).get("name", "")}
    for e in term.get("matchFields") or []:
        if not match_expression(fields, e):
            return False
    return bool(term.get("matchExpressions") or term.get("matchFields"))
