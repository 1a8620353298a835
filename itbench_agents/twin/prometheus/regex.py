"""Label-matcher regexes with Go (RE2) semantics and linear-time matching.

Prometheus matches ``=~``/``!~`` with Go's RE2. Python's backtracking ``re`` (used by series sources
through :class:`Matcher`) differs in syntax (``(?i)`` mid-pattern) and can take exponential time on
patterns such as ``(a+)+b``. So a selector's regex matchers are always re-checked here with Google's
RE2, and only those Python runs in bounded time are pushed down to the source.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import re2

from .values import PromQLError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_NESTED = re.compile(r"[*+}?]\)*[*+{]|\)[*+{?]")


@functools.lru_cache(maxsize=4096)
def anchored(pattern: str) -> Any:
    """``^(?s:pattern)$`` compiled by RE2; invalid patterns are ``bad_data`` errors as in Prometheus."""
    try:
        return re2.compile(f"^(?s:{pattern})$", _OPTIONS)
    except Exception as exc:  # re2.error, or TypeError/ValueError for NUL bytes
        raise PromQLError(f"1:1: parse error: error parsing regexp: {exc}: `{pattern}`", "bad_data") from None


def matches(op: str, pattern: str, value: str) -> bool:
    hit = anchored(pattern).search(value) is not None
    return hit if op == "=~" else not hit


def pushdown_ok(pattern: str) -> bool:
    """Whether a source may pre-filter with ``pattern`` through Python's ``re``: bounded time, and no
    syntax Python reads differently from RE2 (inline flags, POSIX classes) so the source never drops a
    series RE2 would keep (the RE2 re-check removes the extra ones)."""
    return "(?" not in pattern and "[:" not in pattern and python_safe(pattern)


@functools.lru_cache(maxsize=4096)
def python_safe(pattern: str) -> bool:
    """Whether Python's ``re`` runs ``pattern`` in bounded time (no quantified groups or stacked
    quantifiers, few unbounded repeats) and compiles it at all. Shared with LogQL stream selectors
    (:mod:`..loki.regex` re-exports it)."""
    if _NESTED.search(pattern):
        return False
    if len(re.findall(r"(?<!\\)[*+]|\{\d+,\}", pattern)) > 3:
        return False
    try:  # RE2 syntax Python lacks (``(?<name>``, ``\pN``) must not reach a source either
        re.compile(f"(?:{pattern})", re.DOTALL)
    except (re.error, RecursionError, OverflowError, ValueError):
        return False
    return True
