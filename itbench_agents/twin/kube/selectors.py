"""Label selectors (equality- and set-based) and field selectors, parsed as the apiserver does."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import bad_request

Obj = dict[str, Any]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op == "=":
            return labels.get(self.key) == self.values[0]
        if self.op == "!=":
            return labels.get(self.key) != self.values[0]
        if self.op == "in":
            return self.key in labels and labels[self.key] in self.values
        if self.op == "notin":
            return self.key not in labels or labels[self.key] not in self.values
        return False

    def __str__(self) -> str:
        """The requirement as a label-selector string (``app=web``, ``tier in (a,b)``, ``!gpu``)."""
        if self.op in ("=", "!="):
            return f"{self.key}{self.op}{self.values[0]}"
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return f"!{self.key}"
        return f"{self.key} {self.op} ({','.join(self.values)})"


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"


def _split_top(s: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _check_key(key: str, raw: str) -> None:
    if not re.fullmatch(_KEY, key) or len(key) > 316:
        raise bad_request(f'unable to parse requirement: invalid label key "{key}": in selector "{raw}"')


def _check_value(value: str, raw: str) -> None:
    if not re.fullmatch(_VALUE, value) or len(value) > 63:
        raise bad_request(f'unable to parse requirement: invalid label value: "{value}": in selector "{raw}"')


def parse_label_selector(raw: str | None) -> list[Requirement]:
    """``app=x,tier!=db,env in (a,b),!legacy,release`` → requirements (400 BadRequest if malformed)."""
    if not raw:
        return []
    reqs = []
    for part in _split_top(raw):
        m = re.fullmatch(r"(\S+?)\s+(in|notin)\s*\((.*)\)", part)
        if m:
            key, op, vals = m.group(1), m.group(2), m.group(3)
            _check_key(key, raw)
            values = tuple(v.strip() for v in vals.split(",") if v.strip())
            for v in values:
                _check_value(v, raw)
            reqs.append(Requirement(key, op, values))
            continue
        if part.startswith("!"):
            key = part[1:].strip()
            _check_key(key, raw)
            reqs.append(Requirement(key, "!"))
            continue
        m = re.fullmatch(r"([^=!\s]+)\s*(==|=|!=)\s*(\S*)", part)
        if m:
            key, op, value = m.group(1), m.group(2), m.group(3)
            _check_key(key, raw)
            _check_value(value, raw)
            reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
            continue
        if re.fullmatch(_KEY, part):
            reqs.append(Requirement(part, "exists"))
            continue
        raise bad_request(
            f"unable to parse requirement: found '{part}', expected: in, notin, =, ==, !=, gt, lt"
        )
    return reqs


def labels_match(reqs: list[Requirement], obj: Obj) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


def selector_from_label_selector(sel: Obj | None) -> list[Requirement]:
    """A ``metav1.LabelSelector`` (matchLabels + matchExpressions) → requirements."""
    if not sel:
        return []
    reqs = [Requirement(k, "=", (str(v),)) for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(
            e.get("operator", "")
        )
        if op:
            reqs.append(Requirement(e.get("key", ""), op, tuple(e.get("values") or ())))
    return reqs


# ---------------------------------------------------------------------------- field selectors


def _path(obj: Obj, dotted: str) -> str:
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "replicasets": ("status.replicas",),
    "jobs": ("status.successful",),
}


def _event_field(obj: Obj, f: str) -> str:
    if f == "source":
        return str((obj.get("source") or {}).get("component", ""))
    return _path(obj, f)


def parse_field_selector(raw: str | None, resource: str, kind: str) -> Callable[[Obj], bool]:
    """A predicate for ``fieldSelector`` (400 BadRequest for malformed or unsupported fields)."""
    if not raw:
        return lambda o: True
    reqs: list[tuple[str, bool, str]] = []
    for part in _split_top(raw):
        m = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", part)
        if not m:
            raise bad_request(f"invalid selector: '{raw}'; can't understand '{part}'")
        field, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        allowed = _COMMON_FIELDS + FIELDS.get(resource, ())
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        reqs.append((field, op != "!=", value))

    getter = _event_field if resource == "events" else _path

    def pred(obj: Obj) -> bool:
        return all((getter(obj, f) == v) == eq for f, eq, v in reqs)

    return pred
