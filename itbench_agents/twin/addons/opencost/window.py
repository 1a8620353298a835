"""OpenCost's ``window`` and duration parameters (``core/pkg/opencost/window.go``), on the twin's
clock and in UTC.

A window is one of: ``today``, ``yesterday``, ``week`` (Sunday 00:00 to now), ``lastweek``,
``month`` (the 1st 00:00 to now), ``lastmonth``; a duration ``<n>m|h|d|w`` — "the past n units",
rounded as OpenCost rounds it: the end is the *next* boundary of the unit, so ``7d`` at 12:34 ends at
tomorrow 00:00 (``w`` ends at tomorrow 00:00 too); ``<n><unit> offset <n><unit>`` (not rounded);
a pair of Unix seconds ``a,b`` (or ``a-b``); a pair of RFC 3339 UTC times ``A,B``. Anything else is
``illegal window: <text>``, the error OpenCost returns.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass

DAY = 86400.0
WEEK = 7 * DAY
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": DAY, "w": WEEK}
_DURATION = re.compile(r"^(\d+)(m|h|d|w)$")
_DURATION_OFFSET = re.compile(r"^(\d+)(m|h|d|w) offset (\d+)(m|h|d|w)$")
_TIMESTAMPS = re.compile(r"^(\d+)[,|-](\d+)$")
_RFC3339 = r"\d\d\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ"
_RFC_PAIR = re.compile(rf"({_RFC3339}),({_RFC3339})")
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


class WindowError(ValueError):
    """A window or duration OpenCost would refuse; the message is OpenCost's."""


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def _day_start(t: float) -> float:
    return t - (t % DAY)


def _rfc(s: str) -> float:
    return float(calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")))


def parse_window(text: str, now: float) -> Window:
    """The window ``text`` names when the clock reads ``now`` (Unix seconds, UTC)."""
    w = text.strip() if text else ""
    if w == "today":
        s = _day_start(now)
        return Window(s, s + DAY)
    if w == "yesterday":
        s = _day_start(now) - DAY
        return Window(s, s + DAY)
    if w in ("week", "lastweek"):
        today = _day_start(now)
        weekday = (time.gmtime(today).tm_wday + 1) % 7  # Sunday = 0, as Go's Weekday
        s = today - DAY * weekday
        return Window(s, now) if w == "week" else Window(s - WEEK, s)
    if w in ("month", "lastmonth"):
        today = _day_start(now)
        first = today - DAY * (time.gmtime(today).tm_mday - 1)
        if w == "month":
            return Window(first, now)
        prev_last = first - DAY
        prev_first = prev_last - DAY * (time.gmtime(prev_last).tm_mday - 1)
        return Window(prev_first, first)
    m = _DURATION.match(w)
    if m:
        n, unit = int(m.group(1)), _UNIT[m.group(2)]
        if m.group(2) == "w":
            end = _day_start(now) + DAY
            return Window(_day_start(now - n * unit) + DAY, end)
        end = now - (now % unit) + unit
        return Window(end - n * unit, end)
    m = _DURATION_OFFSET.match(w)
    if m:
        end = now - int(m.group(3)) * _UNIT[m.group(4)]
        return Window(end - int(m.group(1)) * _UNIT[m.group(2)], end)
    m = _TIMESTAMPS.match(w)
    if m:
        return Window(float(m.group(1)), float(m.group(2)))
    m = _RFC_PAIR.search(w)
    if m:
        try:
            return Window(_rfc(m.group(1)), _rfc(m.group(2)))
        except ValueError:
            pass
    raise WindowError(f"illegal window: {text}")


def parse_duration(text: str) -> float:
    """A duration such as ``1h``, ``30m``, ``1d``, ``1w`` or ``1h30m``, in seconds (> 0)."""
    t = (text or "").strip()
    pos, total = 0, 0.0
    for m in _GO_DURATION.finditer(t):
        if m.start() != pos:
            break
        total += float(m.group(1)) * (0.001 if m.group(2) == "ms" else _UNIT[m.group(2)])
        pos = m.end()
    if not t or pos != len(t):
        raise WindowError(f'time: invalid duration "{text}"')
    if total <= 0:
        raise WindowError(f"duration must be positive: {text}")
    return total
