"""Label and node selectors as Kubernetes evaluates them — the one implementation the twin's
controllers, its app model, OpenCost's twin, the tools and the evaluation share.

What an absent selector means is not the same everywhere in Kubernetes, so each caller says it:

- :func:`matches` is ``metav1.LabelSelectorAsSelector``: a nil selector selects nothing, an empty
  one (``{}``) everything. Where the Go field is a struct, not a pointer (a NetworkPolicy's
  ``podSelector``), an absent selector is an empty one: pass ``sel or {}``.
- :func:`matches_map` is a plain map selector (a Service's ``spec.selector``, a ReplicationController,
  ``nodeSelector`` terms): empty or absent selects nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]


def labels_of(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def match_expression(labels: Mapping[str, str], expr: Obj) -> bool:
    """One ``matchExpressions`` requirement (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, and the
    node selectors' ``Gt``/``Lt``); an unknown operator matches nothing (the API server rejects it)."""
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


def matches(selector: Obj | None, labels: Mapping[str, str] | None) -> bool:
    """A ``LabelSelector`` (``matchLabels`` and ``matchExpressions``): None selects nothing, ``{}``
    everything."""
    if selector is None:
        return False
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    return all(match_expression(labels, e) for e in selector.get("matchExpressions") or [])


def matches_map(selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    """A plain map selector (Service ``spec.selector``, ``nodeSelector``): empty selects nothing."""
    if not selector:
        return False
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


def node_selector_term_matches(term: Obj, node: Obj) -> bool:
    """One ``nodeSelectorTerms`` entry: its expressions on the node's labels and its fields on
    ``metadata.name``; a term with neither matches no node."""
    labels = labels_of(node)
    for e in term.get("matchExpressions") or []:
        if not match_expression(labels, e):
            return False
    fields = {"metadata.name": node.get("metadata", {}).get("name", "")}
    for e in term.get("matchFields") or []:
        if not match_expression(fields, e):
            return False
    return bool(term.get("matchExpressions") or term.get("matchFields"))
