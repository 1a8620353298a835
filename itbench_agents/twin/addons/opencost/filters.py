"""OpenCost's filter language (v2) for allocations and assets: ``namespace:"otel-demo"``,
``label[app]!:"cart","ad"``, ``pod<~:"load-"`` joined with ``+`` (and) and ``|`` (or), with
parentheses.

Operators: ``:`` equals (any of the listed values), ``!:`` equals none of them, ``~:`` contains,
``!~:`` contains none, ``<~:`` starts with, ``!<~:``, ``~>:`` ends with, ``!~>:``. For a list
property (``services``) ``:`` means "contains an element equal to". A malformed filter raises
``FilterError`` (400 from the API) instead of matching nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ALLOCATION_FIELDS = (
    "cluster",
    "node",
    "namespace",
    "controllerName",
    "controllerKind",
    "container",
    "pod",
    "services",
    "label",
    "annotation",
)
ASSET_FIELDS = (
    "name",
    "assetType",
    "category",
    "cluster",
    "project",
    "provider",
    "providerID",
    "account",
    "service",
    "type",
    "label",
)
_TOKEN = re.compile(
    r"""\s*(?:
    (?P<lp>\()|(?P<rp>\))|(?P<and>\+)|(?P<or>\|)|(?P<comma>,)|
    (?P<str>"(?:[^"\\]|\\.)*")|
    (?P<op>!~>:|!<~:|!~:|~>:|<~:|~:|!:|:)|
    (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?)
    )""",
    re.VERBOSE,
)

Getter = Callable[[str, str], Any]
"""``get(field, key)`` → the property's value (a string, a list of strings, or None)."""
Predicate = Callable[[Getter], bool]


class FilterError(ValueError):
    pass


@dataclass
class _Tok:
    kind: str
    text: str
    pos: int


def _tokens(text: str) -> list[_Tok]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise FilterError(f"unexpected character {text[pos:].lstrip()[:1]!r} at position {pos}")
        kind = m.lastgroup or ""
        out.append(_Tok(kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


def parse_filter(text: str, fields: tuple[str, ...] = ALLOCATION_FIELDS) -> Predicate:
    """Compile a filter; an empty filter matches everything."""
    if not text or not text.strip():
        return lambda get: True
    if len(text) > 10_000:
        raise FilterError("filter is longer than 10000 characters")
    toks = _tokens(text)
    i = 0

    def peek() -> _Tok | None:
        return toks[i] if i < len(toks) else None

    def take(kind: str) -> _Tok:
        nonlocal i
        t = peek()
        if t is None or t.kind != kind:
            where = f"'{t.text}' at position {t.pos}" if t else "end of filter"
            raise FilterError(f"expected {kind}, found {where}")
        i += 1
        return t

    def expr() -> Predicate:
        left = term()
        t = peek()
        if t is None or t.kind not in ("and", "or"):
            return left
        op = t.kind
        parts = [left]
        while (t := peek()) is not None and t.kind in ("and", "or"):
            if t.kind != op:
                raise FilterError(f"cannot mix '+' and '|' without parentheses (position {t.pos})")
            take(op)
            parts.append(term())
        if op == "and":
            return lambda get: all(p(get) for p in parts)
        return lambda get: any(p(get) for p in parts)

    def term() -> Predicate:
        t = peek()
        if t is not None and t.kind == "lp":
            take("lp")
            inner = expr()
            take("rp")
            return inner
        return comparison()

    def comparison() -> Predicate:
        ident = take("ident").text
        name, _, key = ident.partition("[")
        key = key.rstrip("]")
        if name not in fields:
            raise FilterError(f"unknown filter field {name!r}; known: {', '.join(fields)}")
        if name in ("label", "annotation") and not key:
            raise FilterError(f"{name} needs a key: {name}[<key>]")
        op = take("op").text
        values = [_unquote(take("str").text)]
        while (t := peek()) is not None and t.kind == "comma":
            take("comma")
            values.append(_unquote(take("str").text))
        return _compare(name, key, op, values)

    pred = expr()
    if i != len(toks):
        raise FilterError(f"unexpected '{toks[i].text}' at position {toks[i].pos}")
    return pred


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def _compare(name: str, key: str, op: str, values: list[str]) -> Predicate:
    negate = op.startswith("!")
    base = op.lstrip("!")
    test: Callable[[str, str], bool] = {
        ":": lambda a, b: a == b,
        "~:": lambda a, b: b in a,
        "<~:": lambda a, b: a.startswith(b),
        "~>:": lambda a, b: a.endswith(b),
    }[base]

    def pred(get: Getter) -> bool:
        v = get(name, key)
        items = [str(x) for x in v] if isinstance(v, list) else [] if v is None else [str(v)]
        if not items:
            items = [""]
        hit = any(test(item, want) for item in items for want in values)
        return not hit if negate else hit

    return pred
