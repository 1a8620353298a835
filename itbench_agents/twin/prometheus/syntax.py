"""PromQL syntax as the engine reads it: parsing with ``promql-parser`` (errors in Prometheus'
wording), selectors' matchers (RE2 regexes rewritten for Python), enum names, Go's ``%g`` and
durations. The engine, its functions and its aggregations all use these; none of them is here."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import promql_parser as pp

from ..telemetry.sources import Matcher
from .limits import utf8_escapes
from .values import PromQLError

_MATCH_OPS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


def ename(x: Any) -> str:
    """Variant name of a promql-parser enum value (``MatchOp.Equal`` → ``Equal``)."""
    return str(x).rsplit(".", 1)[-1]


def go_g(v: float) -> str:
    """Go's ``%g`` of a float (``NaN``, ``+Inf``, ``1.1``, ``1e+06``)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{v:g}"


def td_ms(td: timedelta | None) -> int:
    if td is None:
        return 0
    return (td.days * 86_400_000) + td.seconds * 1000 + td.microseconds // 1000


def binding_failed(exc: BaseException) -> bool:
    """Whether ``exc``, raised inside a promql-parser call, is the binding's own failure: an
    ``Exception`` or pyo3's ``PanicException`` (a BaseException). Anything else — Ctrl-C, SIGTERM's
    exception, ``SystemExit`` — only happened to arrive during the call and must propagate."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def parse(query: str) -> Any:
    """Parse with promql-parser; syntax errors become ``bad_data`` errors in Prometheus' wording,
    with ``line:col`` positions (``parse_errors.translate``)."""
    try:
        return pp.parse(utf8_escapes(query))
    except BaseException as exc:  # the Rust binding may raise ValueError or a panic exception
        if not binding_failed(exc):
            raise
        from .parse_errors import translate

        raise PromQLError(translate(query, str(exc)), "bad_data") from None


def go_regex(pattern: str) -> str:
    """Rewrite RE2 syntax Python's ``re`` lacks: inline flags like ``(?i)`` not at the start of the
    pattern apply to the rest of their group in RE2 → ``(?i:...)`` scoped groups."""
    if "(?" not in pattern[1:]:
        return pattern
    out: list[str] = []
    i = 0
    opened: list[int] = []  # extra ')' to emit when the enclosing group closes, per depth
    depth_extra = [0]
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append(pattern[i : j + 1])
            i = j + 1
            continue
        m = re.match(r"\(\?([imsU]+)\)", pattern[i:])
        if m and i > 0:
            flags = m.group(1).replace("U", "")
            out.append(f"(?{flags}:" if flags else "(?:")
            depth_extra[-1] += 1
            i += m.end()
            continue
        if c == "(":
            depth_extra.append(0)
            opened.append(i)
        elif c == ")" and len(depth_extra) > 1:
            out.append(")" * depth_extra.pop())
        out.append(c)
        i += 1
    out.append(")" * depth_extra[0])
    return "".join(out)


def to_matcher(m: Any) -> Matcher:
    op = _MATCH_OPS[ename(m.op)]
    value = go_regex(m.value) if op in ("=~", "!~") else m.value
    return Matcher(m.name, op, value)  # type: ignore[arg-type]


def _matcher_groups(vs: Any, conv: Callable[[Any], Matcher]) -> list[list[Matcher]]:
    """The matcher sets of a vector selector (several only with ``or`` matchers), each matcher
    converted by ``conv`` and the metric name prepended as ``__name__="..."``."""
    from .extended import split_ext

    base = [conv(m) for m in split_ext(list(vs.matchers.matchers))[0]]
    if vs.name:
        base.insert(0, Matcher("__name__", "=", vs.name))
    groups = [base]
    for alt in vs.matchers.or_matchers or []:
        g = [conv(m) for m in alt]
        if vs.name:
            g.insert(0, Matcher("__name__", "=", vs.name))
        groups.append(g)
    if vs.matchers.or_matchers and not vs.matchers.matchers:
        groups = groups[1:]
    return groups


def raw_matchers(vs: Any) -> list[list[Matcher]]:
    """Like :func:`to_matchers` but with regexes exactly as written (RE2 syntax)."""
    return _matcher_groups(vs, lambda m: Matcher(m.name, _MATCH_OPS[ename(m.op)], m.value))  # type: ignore[arg-type]


def selector_ext(vs: Any) -> str | None:
    """The extended-selector modifier (``anchored``/``smoothed``) carried by a selector, if any."""
    from .extended import split_ext

    return split_ext(list(vs.matchers.matchers))[1]


def to_matchers(vs: Any) -> list[list[Matcher]]:
    """The matcher sets of a vector selector (several only with ``or`` matchers)."""
    return _matcher_groups(vs, to_matcher)
