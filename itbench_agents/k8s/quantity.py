"""Kubernetes resource quantities: parsing (``500m`` → 0.5, ``256Mi`` → 268435456, ``1G`` → 1e9)
and the API server's canonical printing (0.5 cpu → ``500m``, 536870912 → ``512Mi``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


def parse_quantity(q: str | int | float | None) -> float:
    """Kubernetes quantity → float ('500m' → 0.5, '256Mi' → 268435456, '1G' → 1e9)."""
    if q is None:
        return 0.0
    if isinstance(q, int | float):
        return float(q)
    return _parse_quantity_text(str(q))


@lru_cache(maxsize=4096)
def _parse_quantity_text(text: str) -> float:
    """Quantities are parsed on every controller sync; the few distinct strings are parsed once."""
    s = text.strip()
    suffixes = {
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "Pi": 2**50,
        "Ei": 2**60,
        "n": 1e-9,
        "u": 1e-6,
        "m": 1e-3,
        "k": 1e3,
        "K": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "P": 1e15,
        "E": 1e18,
    }
    for suf in sorted(suffixes, key=len, reverse=True):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * suffixes[suf]
    return float(s)


def quantity(q: Any, default: float | None = None) -> float | None:
    """A Kubernetes quantity, or ``default`` when absent or malformed (never raises)."""
    if q is None or q == "":
        return default
    try:
        return parse_quantity(q)
    except (ValueError, TypeError):
        return default


_BIN = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DEC = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def is_cpu_like(resource: str) -> bool:
    return resource.split(".")[-1] == "cpu"


def format_quantity(value: float, like: str | None = None) -> str:
    """Canonical form of ``value`` ('0.5' cpu → '500m', 536870912 → '512Mi'), binary suffixes when
    ``like`` used one (or, with no hint, when the value is a whole number of Ki)."""
    if value == 0:
        return "0"
    binary = like is not None and str(like).endswith("i")
    if like is None:
        binary = value >= 1024 and float(value).is_integer() and int(value) % 1024 == 0
    if binary and float(value).is_integer():
        v = int(value)
        for suf, mult in _BIN:
            if v % mult == 0:
                return f"{v // mult}{suf}"
        return str(v)
    if float(value).is_integer():
        v = int(value)
        for suf, mult in _DEC:
            if v % mult == 0:
                return f"{v // mult}{suf}"
        return str(v)
    milli = round(value * 1000)
    if milli % 1000 == 0:
        return str(milli // 1000)
    return f"{milli}m"
