"""Kyverno's ``validate.pattern``: a resource matched element by element against an overlay
pattern, with anchors (``pkg/engine/validate``, ``pkg/engine/anchor``).

Anchors on keys: ``(k)`` conditional (the rest of the map applies only if it matches, else the
rule is skipped), ``<(k)`` global (a mismatch skips the whole rule), ``=(k)`` equality (checked
only where the key exists), ``^(k)`` existence (some list element must match), ``X(k)`` negation
(the key must be absent). A failure carries the path Kyverno reports
(``/spec/containers/0/securityContext/privileged/``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .values import value_matches, wildcard_match

_ANCHOR = re.compile(r"^(\+|=|X|\^|<)?\((.+)\)$")


@dataclass(frozen=True)
class Anchor:
    modifier: str  # "" conditional, "=", "X", "^", "<", "+"
    key: str


@lru_cache(maxsize=8192)
def parse_anchor(key: str) -> Anchor | None:
    m = _ANCHOR.match(key)
    return Anchor(m.group(1) or "", m.group(2)) if m else None


class PatternMismatch(Exception):
    """Why a resource does not match; ``kind`` decides what the rule reports:
    ``conditional``/``global`` → skip, ``negation`` → fail, ``skip`` (every list element was
    skipped) → skip, ``plain`` → fail."""

    def __init__(self, message: str, path: str, kind: str = "plain") -> None:
        super().__init__(message)
        self.path = path
        self.kind = kind

    @property
    def skips(self) -> bool:
        return self.kind in ("conditional", "global", "skip")


def match_pattern(resource: Any, pattern: Any) -> PatternMismatch | None:
    """None when ``resource`` matches ``pattern``; else the mismatch (its ``skips`` says whether the
    rule is skipped rather than failed)."""
    try:
        _element(resource, pattern, "/")
    except PatternMismatch as exc:
        return exc
    return None


def _element(resource: Any, pattern: Any, path: str) -> None:
    if isinstance(pattern, dict):
        if not isinstance(resource, dict):
            raise PatternMismatch(
                f"pattern and resource have different structures. Path: {path}. "
                f"Expected map, found {_type(resource)}",
                path,
            )
        _map(resource, pattern, path)
    elif isinstance(pattern, list):
        if not isinstance(resource, list):
            raise PatternMismatch(
                f"validation rule failed at path {path}, resource does not satisfy the expected overlay pattern",
                path,
            )
        _array(resource, pattern, path)
    else:
        items = resource if isinstance(resource, list) else [resource]
        for item in items:
            if not value_matches(item, pattern):
                raise PatternMismatch(
                    f"resource value '{_show(resource)}' does not match '{_show(pattern)}' at path {path}",
                    path,
                )


def _map(resource: dict[str, Any], pattern: dict[str, Any], path: str) -> None:
    pattern = _expand_metadata_wildcards(pattern, resource)
    anchors = {
        k: v for k, v in pattern.items() if (a := parse_anchor(k)) and a.modifier in ("", "<", "^", "=", "X")
    }
    plain = {k: v for k, v in pattern.items() if k not in anchors}
    for key in sorted(anchors):
        _handle(key, anchors[key], resource, path)
    # keys whose value holds anchors go first (Kyverno's getSortedNestedAnchorResource)
    for key in sorted(plain, key=lambda k: 0 if _has_anchors(plain[k]) else 1):
        _handle(key, plain[key], resource, path)


def _handle(key: str, pattern: Any, resource: dict[str, Any], path: str) -> None:
    anchor = parse_anchor(key)
    if anchor is None or anchor.modifier == "+":
        here = path + key + "/"
        if pattern == "*":
            if resource.get(key) is None:
                raise PatternMismatch(f"{path}/{key} not found", path)
            return
        _element(resource.get(key), pattern, here)
        return
    here = path + anchor.key + "/"
    present = anchor.key in resource
    value = resource.get(anchor.key)
    if anchor.modifier == "":
        if not present:
            raise PatternMismatch("conditional anchor key doesn't exist in the resource", here, "conditional")
        try:
            _element(value, pattern, here)
        except PatternMismatch as exc:
            raise PatternMismatch(f"conditional anchor mismatch: {exc}", exc.path, "conditional") from None
    elif anchor.modifier == "<":
        if present:
            try:
                _element(value, pattern, here)
            except PatternMismatch as exc:
                raise PatternMismatch(f"global anchor mismatch: {exc}", exc.path, "global") from None
    elif anchor.modifier == "=":
        if present:
            _element(value, pattern, here)
    elif anchor.modifier == "X":
        if present:
            raise PatternMismatch(
                f"negation anchor matched in resource: {here} is not allowed", here, "negation"
            )
    elif anchor.modifier == "^" and present:
        if not isinstance(value, list):
            raise PatternMismatch(
                f"invalid resource type {_type(value)}: Existence ^ () anchor can be used only on list/array type resource",
                here,
            )
        if not isinstance(pattern, list) or not all(isinstance(p, dict) for p in pattern):
            raise PatternMismatch("invalid pattern type: Pattern has to be a list of maps", here)
        for p in pattern:
            if not any(_matches(item, p, f"{here}{i}/") for i, item in enumerate(value)):
                raise PatternMismatch(f"existence anchor validation failed at path {here}", here)


def _matches(resource: Any, pattern: Any, path: str) -> bool:
    try:
        _element(resource, pattern, path)
    except PatternMismatch:
        return False
    return True


def _array(resource: list[Any], pattern: list[Any], path: str) -> None:
    if not pattern:
        raise PatternMismatch("pattern Array empty", path)
    first = pattern[0]
    if isinstance(first, dict):  # every element against the one map (its anchors may skip some)
        _pairs([(item, first) for item in resource], path)
    elif not isinstance(first, list):
        _element(resource, first, path)
    else:  # element by element
        if len(resource) < len(pattern):
            raise PatternMismatch(
                f"validate Array failed, array length mismatch, resource Array len is {len(resource)} "
                f"and pattern Array len is {len(pattern)}",
                "",
            )
        _pairs(list(zip(resource, pattern, strict=False)), path)


def _pairs(pairs: list[tuple[Any, Any]], path: str) -> None:
    """Each (element, pattern) must match; elements a conditional anchor skips do not count, and
    when every one is skipped the array is skipped."""
    applied, skipped = 0, []
    for i, (item, p) in enumerate(pairs):
        try:
            _element(item, p, f"{path}{i}/")
        except PatternMismatch as exc:
            if exc.skips:
                skipped.append(str(exc))
                continue
            raise
        applied += 1
    if applied == 0 and skipped:
        raise PatternMismatch("; ".join(skipped), path, "skip")


def _has_anchors(pattern: Any) -> bool:
    return isinstance(pattern, dict) and any(parse_anchor(k) for k in pattern)


def _expand_metadata_wildcards(pattern: dict[str, Any], resource: dict[str, Any]) -> dict[str, Any]:
    """A wildcard key (``container.apparmor.security.beta.kubernetes.io/*``, as label and
    annotation patterns use) names every resource key it matches, anchor kept (Kyverno's
    wildcards.ExpandInMetadata); with no match it stays as written."""
    if not any(("*" in k or "?" in k) for k in pattern):
        return pattern
    out: dict[str, Any] = {}
    for k, v in pattern.items():
        anchor = parse_anchor(k)
        bare = anchor.key if anchor else k
        if "*" in bare or "?" in bare:
            hits = [rk for rk in resource if wildcard_match(bare, rk)]
            for rk in hits or [bare]:
                out[f"{anchor.modifier}({rk})" if anchor else rk] = v
        else:
            out[k] = v
    return out


def _type(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "array"
    return "nil" if value is None else type(value).__name__


def _show(value: Any) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_show(v)}" for k, v in sorted(value.items())) + "]"
    return str(value)
