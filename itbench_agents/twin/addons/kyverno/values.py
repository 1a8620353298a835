"""Kyverno's scalar comparisons: wildcards, quantities, durations and the operators a pattern
value may carry (``>=1``, ``!*``, ``1-10``, ``a | b``, ``x & y``).

What Kyverno's ``pkg/engine/common/pattern.go`` and ``pkg/engine/operator`` decide, value by value:
an ``int`` pattern matches an integral float or a numeric string; a ``nil`` pattern matches a zero
value; a string pattern is split on ``|`` (any) and ``&`` (all), each part an operator plus a
number (a Kubernetes quantity: ``>=100Mi``) or a wildcard string.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
_SUFFIX = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNIT = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_quantity(text: str) -> Decimal | None:
    """A Kubernetes resource quantity (``500m``, ``1Gi``, ``2e3``) as a Decimal, or None."""
    m = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    suffix = m.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * (Decimal(10) ** int(suffix[1:]))
    return number * _SUFFIX[suffix] if suffix else number


def parse_go_duration(text: str) -> float | None:
    """Go's ``time.ParseDuration`` (``1h30m``, ``-2.5s``, ``0``) in seconds, or None."""
    if not isinstance(text, str):
        return None
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    if not s:
        return None
    total, pos = 0.0, 0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _DURATION_UNIT[m.group(2)]
        pos = m.end()
    return sign * total if pos == len(s) and pos > 0 else None


def parse_duration_pair(key: Any, value: Any) -> tuple[float, float] | None:
    """Kyverno compares two values as durations when both are durations, or one is a duration
    and the other a number of seconds (``operator/duration.go``)."""

    def one(x: Any) -> tuple[float | None, bool]:
        if isinstance(x, bool):
            return None, False
        if isinstance(x, int | float):
            return float(x), False
        if isinstance(x, str):
            d = parse_go_duration(x)
            if d is not None and x.strip() != "0":
                return d, True
        return None, False

    k, k_is_duration = one(key)
    v, v_is_duration = one(value)
    if k is None or v is None or not (k_is_duration or v_is_duration):
        return None
    return k, v


@lru_cache(maxsize=4096)
def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    out = []
    for ch in pattern:
        out.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
    return re.compile("".join(out), re.S)


def wildcard_match(pattern: str, text: str) -> bool:
    """``*`` any run of characters, ``?`` exactly one (minio's wildcard.Match)."""
    if "*" not in pattern and "?" not in pattern:
        return pattern == text
    return _wildcard_regex(pattern).fullmatch(text) is not None


def go_string(value: Any) -> str | None:
    """How Kyverno turns a scalar into a string for a string pattern (None: not a scalar)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return value
    return None


def _go_float(value: float) -> str:
    if value == math.trunc(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


# ---------------------------------------------------------------- pattern values (pattern.go)
OPERATORS = (">=", "<=", ">", "<", "!")
_NOT_IN_RANGE = re.compile(r"^(\d+(?:\.\d+)?)([^-]*)!-(\d+(?:\.\d+)?)([^-]*)$")
_IN_RANGE = re.compile(r"^(\d+(?:\.\d+)?)([^-]*)-(\d+(?:\.\d+)?)([^-]*)$")


def operator_of(pattern: str) -> str:
    """The operator a pattern string starts with: ``>=``, ``<=``, ``>``, ``<``, ``!``, a range
    (``in-range`` ``a-b``, ``not-in-range`` ``a!-b``) or ``""`` (equality)."""
    if len(pattern) < 2:
        return ""
    for op in OPERATORS:
        if pattern.startswith(op):
            return op
    if _NOT_IN_RANGE.match(pattern):
        return "not-in-range"
    if _IN_RANGE.match(pattern):
        return "in-range"
    return ""


def value_matches(value: Any, pattern: Any) -> bool:
    """Whether a resource value satisfies a scalar pattern (Kyverno's ValidateValueWithPattern)."""
    if isinstance(pattern, bool):
        return isinstance(value, bool) and value == pattern
    if isinstance(pattern, int):
        return _int_matches(value, pattern)
    if isinstance(pattern, float):
        return _float_matches(value, pattern)
    if isinstance(pattern, str):
        return any(
            all(_matches_one(value, part.strip()) for part in alternative.strip().split("&"))
            for alternative in pattern.split("|")
        )
    if pattern is None:
        if isinstance(value, bool):
            return not value
        if isinstance(value, int | float):
            return value == 0
        if isinstance(value, str):
            return value == ""
        return value is None
    if isinstance(pattern, dict):
        return isinstance(value, dict)
    return False


def _int_matches(value: Any, pattern: int) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value == pattern
    if isinstance(value, float):
        return value == math.trunc(value) and int(value) == pattern
    if isinstance(value, str):
        try:
            return int(value, 10) == pattern
        except ValueError:
            return False
    return False


def _float_matches(value: Any, pattern: float) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return pattern == math.trunc(pattern) and int(pattern) == value
    if isinstance(value, float):
        return value == pattern
    if isinstance(value, str):
        try:
            return float(value) == pattern
        except ValueError:
            return False
    return False


def _matches_one(value: Any, pattern: str) -> bool:
    op = operator_of(pattern)
    if op == "in-range":
        left, right = pattern.split("-", 1)
        if not _matches_one(value, ">=" + left):
            return False
        pattern, op = "<=" + right, "<="
    elif op == "not-in-range":
        left, right = pattern.split("!-", 1)
        if _matches_one(value, "<" + left):
            return True
        pattern, op = ">" + right, ">"
    rest = pattern[len(op) :].strip()
    if not re.match(r"^\d", rest):  # no number: a (wildcard) string
        return _string_matches(value, rest, op)
    return _number_matches(value, rest, op)


def _string_matches(value: Any, pattern: str, op: str) -> bool:
    if op not in ("", "!"):
        return False  # >, <... do not apply to strings
    text = _scalar_text(value)
    if text is None:
        return False
    hit = wildcard_match(pattern, text)
    return not hit if op == "!" else hit


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, float):
        return f"{value:E}".replace("E+0", "E+").replace("E-0", "E-")  # Go's 'E' format
    return go_string(value)


def _number_matches(value: Any, pattern: str, op: str) -> bool:
    text = go_string(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else None
    if text is None:
        return False
    want = parse_quantity(pattern)
    if want is not None:
        have = parse_quantity(text)
        if have is None:
            return False
        return compare(have, want, op)
    durations = parse_duration_pair(text, pattern)
    if durations is not None:
        return compare(Decimal(str(durations[0])), Decimal(str(durations[1])), op)
    return wildcard_match(pattern, text)


def compare(have: Decimal | float, want: Decimal | float, op: str) -> bool:
    return {
        "": have == want,
        "!": have != want,
        ">": have > want,
        "<": have < want,
        ">=": have >= want,
        "<=": have <= want,
    }.get(op, False)
