"""The CronJob controller's schedule: the next run time after a moment is the first matching minute,
exactly as trying every minute of the next year finds it (the reference below), found by skipping
days and hours that cannot match (a quarter-end schedule is three months of minutes away)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from itbench_agents.twin.controllers.job import CronSchedule

SCHEDULES = [
    "0 0 1 */3 *",  # the protected baseline's quarter-end close
    "*/5 * * * *",
    "30 2 * * 0",
    "0 4 * * 3",
    "0 3 * * 6",
    "15,45 9-17 * * 1-5",
    "0 12 1 * 1",  # day of month OR day of week
    "59 23 31 12 *",
    # the reference tries a whole year of minutes for each moment of these two
    pytest.param("0 0 29 2 *", marks=pytest.mark.slow),  # a leap day: over a year away from most moments
    pytest.param("0 0 31 4 *", marks=pytest.mark.slow),  # never
    "@hourly",
    "@monthly",
    "*/7 */5 */3 */2 *",
]


def reference_next_after(sched: CronSchedule, ts: float) -> float:
    t = datetime.fromtimestamp(math.floor(ts / 60) * 60, tz=UTC) + timedelta(minutes=1)
    for _ in range(366 * 24 * 60):
        if (
            t.month in sched.months
            and sched._day_ok(t)
            and t.hour in sched.hours
            and t.minute in sched.minutes
        ):
            return t.timestamp()
        t += timedelta(minutes=1)
    raise ValueError("no run time within a year")


def moments(n: int) -> list[float]:
    rng = random.Random(7)
    start = datetime(2023, 1, 1, tzinfo=UTC).timestamp()
    picked = [start + rng.uniform(0, 3 * 365 * 86400) for _ in range(n)]
    edges = [datetime(2024, 2, 29, 0, 0, tzinfo=UTC), datetime(2024, 12, 31, 23, 59, 30, tzinfo=UTC)]
    return picked + [e.timestamp() for e in edges] + [datetime(2024, 3, 31, 23, 59, tzinfo=UTC).timestamp()]


@pytest.mark.parametrize("text", SCHEDULES)
def test_the_next_run_is_the_first_matching_minute(text: str) -> None:
    sched = CronSchedule(text)
    for ts in moments(4):
        try:
            want: float | str = reference_next_after(sched, ts)
        except ValueError as e:
            want = str(e)
        try:
            got: float | str = sched.next_after(ts)
        except ValueError as e:
            got = str(e)
        assert got == want, (text, datetime.fromtimestamp(ts, tz=UTC))
