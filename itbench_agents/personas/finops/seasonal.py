"""The seasonal baseline of a day in a daily bill: the same weekday of the previous weeks, or the
previous month ends for a month-end day (month ends are left out of ordinary baselines). Shared by
validation and the audit; the ``finops-heuristic`` agent keeps its own copy (agents import nothing
of a persona)."""

from __future__ import annotations

import calendar
from datetime import date, timedelta


def month_end(d: date) -> bool:
    return d.day == calendar.monthrange(d.year, d.month)[1]


def baseline_days(day: str, available: set[str], weeks: int) -> list[str]:
    """ISO dates of ``day``'s baseline that are in ``available``."""
    d0 = date.fromisoformat(day)
    if month_end(d0):
        out, y, m = [], d0.year, d0.month
        for _ in range(weeks):
            m -= 1
            if m == 0:
                y, m = y - 1, 12
            iso = date(y, m, calendar.monthrange(y, m)[1]).isoformat()
            if iso in available:
                out.append(iso)
        return out
    days = [d0 - timedelta(weeks=k) for k in range(1, weeks + 1)]
    return [d.isoformat() for d in days if d.isoformat() in available and not month_end(d)]
