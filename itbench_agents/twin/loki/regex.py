"""Go (RE2) regular expressions for LogQL, through Google's RE2 library.

Loki is written in Go, whose ``regexp`` package implements RE2 syntax in linear time. Using RE2
itself gives the same syntax (no look-arounds or back-references, ``\\d`` is ASCII) and, above all,
no catastrophic backtracking: a query such as ``|~ "(.*)*x"`` cannot hang the twin.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from ..prometheus.regex import pushdown_ok, python_safe

__all__ = [
    "Regex",
    "RegexError",
    "compile_anchored",
    "compile_go",
    "matches_label",
    "pushdown_ok",
    "python_safe",
]

Regex = Any  # a compiled ``re2`` pattern: search / match / fullmatch / groupindex like ``re``

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors are reported to the client, not logged by the C++ library

# RE2's wording -> Go regexp's wording (``error parsing regexp: missing closing ): `(```)
_RENAMES = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "bad repetition operator": "invalid nested repetition operator",
    "bad repetition argument": "invalid repeat count",
    "invalid repetition size": "invalid repeat count",
}


class RegexError(ValueError):
    """A pattern RE2 refuses; ``str`` is Go's ``error parsing regexp: ...`` text."""


def _go_message(raw: str, pattern: str) -> str:
    code, sep, frag = raw.partition(": ")
    code = _RENAMES.get(code, code)
    return f"error parsing regexp: {code}: `{frag if sep else pattern}`"


@functools.lru_cache(maxsize=4096)
def compile_go(pattern: str) -> Regex:
    """Compile ``pattern`` as Go would; raises :class:`RegexError` with Go's wording."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else "invalid pattern"
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise RegexError(_go_message(text, pattern)) from None
    except (TypeError, ValueError, OverflowError) as exc:  # NUL bytes and the like
        raise RegexError(f"error parsing regexp: {exc}: `{pattern}`") from None


def compile_anchored(pattern: str) -> Regex:
    """The fully anchored form Prometheus/Loki label matchers use."""
    return compile_go(f"^(?s:{pattern})$")


def matches_label(op: str, pattern: str, value: str) -> bool:
    """A label matcher's verdict for ``=``, ``!=``, ``=~`` and ``!~``."""
    if op == "=":
        return value == pattern
    if op == "!=":
        return value != pattern
    hit = compile_anchored(pattern).search(value) is not None
    return hit if op == "=~" else not hit
