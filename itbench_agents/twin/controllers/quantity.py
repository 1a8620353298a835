"""Resource quantities: parsing (from :mod:`twin.runtime`) and the apiserver's canonical printing."""

from __future__ import annotations

from ..runtime import parse_quantity

__all__ = ["format_quantity", "parse_quantity", "is_cpu_like"]

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
