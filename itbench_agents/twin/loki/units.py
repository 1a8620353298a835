"""Durations and byte sizes as LogQL spells them (Prometheus ranges, Go durations, humanize bytes)."""

from __future__ import annotations

import re

_PROM_UNITS_NS = {
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
    "w": 604_800_000_000_000,
    "y": 31_536_000_000_000_000,
}
_PROM_DUR = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")

_GO_UNITS_NS = {
    "ns": 1.0,
    "us": 1e3,
    "µs": 1e3,
    "μs": 1e3,
    "ms": 1e6,
    "s": 1e9,
    "m": 60e9,
    "h": 3600e9,
}
_GO_DUR = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")

_BYTE_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "pb": 1000**5,
    "eb": 1000**6,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "pib": 1024**5,
    "eib": 1024**6,
}
_BYTES = re.compile(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]*)")


def parse_prom_duration(text: str) -> int:
    """Prometheus ``model.ParseDuration`` (``5m``, ``1h30m``) in nanoseconds; ValueError if invalid."""
    if text in ("", "0"):
        if text == "0":
            return 0
        raise ValueError("empty duration string")
    pos = 0
    total = 0
    last_rank = -1
    order = ["y", "w", "d", "h", "m", "s", "ms"]
    for m in _PROM_DUR.finditer(text):
        if m.start() != pos:
            break
        rank = order.index(m.group(2))
        if rank <= last_rank:
            raise ValueError(f'not a valid duration string: "{text}"')
        last_rank = rank
        total += int(m.group(1)) * _PROM_UNITS_NS[m.group(2)]
        pos = m.end()
    if pos != len(text):
        raise ValueError(f'not a valid duration string: "{text}"')
    return total


def parse_go_duration(text: str) -> float:
    """Go ``time.ParseDuration`` in seconds (``1.5s``, ``-2m3s``, ``250ms``); ValueError if invalid."""
    s = text
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    pos = 0
    total_ns = 0.0
    for m in _GO_DUR.finditer(s):
        if m.start() != pos:
            break
        total_ns += float(m.group(1)) * _GO_UNITS_NS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        if re.fullmatch(r"[0-9.]+", s):
            raise ValueError(f'time: missing unit in duration "{text}"')
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * total_ns / 1e9


def parse_bytes(text: str) -> float:
    """humanize.ParseBytes: ``10KB`` = 10000, ``1KiB`` = 1024, ``42`` = 42; ValueError if invalid."""
    m = _BYTES.fullmatch(text.strip())
    if not m:
        raise ValueError(f"strconv.ParseFloat: parsing {text!r}: invalid syntax")
    unit = m.group(2).lower()
    if unit in ("", "b"):
        mult = 1
    elif unit in _BYTE_UNITS:
        mult = _BYTE_UNITS[unit]
    elif unit + "b" in _BYTE_UNITS:  # "10k", "3Mi"
        mult = _BYTE_UNITS[unit + "b"]
    else:
        raise ValueError(f"unhandled size name: {unit}")
    return float(m.group(1)) * mult


def go_duration_string(ns: int) -> str:
    """Go's ``time.Duration.String`` for whole-second-or-more values (``721h0m0s``)."""
    secs, frac = divmod(ns, 1_000_000_000)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    frac_s = f".{frac:09d}".rstrip("0") if frac else ""
    if h:
        return f"{h}h{m}m{s}{frac_s}s"
    if m:
        return f"{m}m{s}{frac_s}s"
    return f"{s}{frac_s}s"
