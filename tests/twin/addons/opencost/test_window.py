"""OpenCost's window grammar on the twin's clock (``core/pkg/opencost/window.go``)."""

from __future__ import annotations

import calendar

import pytest

from itbench_agents.twin.addons.opencost.window import WindowError, parse_duration, parse_window


def ts(s: str) -> float:
    import time

    return float(calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")))


NOW = ts("2026-12-03T12:34:56Z")  # a Thursday


def test_durations_round_forward_to_the_unit_as_opencost_does() -> None:
    w = parse_window("7d", NOW)
    assert (w.start, w.end) == (ts("2026-11-27T00:00:00Z"), ts("2026-12-04T00:00:00Z"))
    w = parse_window("2h", NOW)
    assert (w.start, w.end) == (ts("2026-12-03T11:00:00Z"), ts("2026-12-03T13:00:00Z"))
    w = parse_window("30m", NOW)
    assert (w.start, w.end) == (ts("2026-12-03T12:05:00Z"), ts("2026-12-03T12:35:00Z"))
    w = parse_window("1w", NOW)
    assert (w.start, w.end) == (ts("2026-11-27T00:00:00Z"), ts("2026-12-04T00:00:00Z"))


def test_named_windows() -> None:
    assert parse_window("today", NOW).start == ts("2026-12-03T00:00:00Z")
    y = parse_window("yesterday", NOW)
    assert (y.start, y.end) == (ts("2026-12-02T00:00:00Z"), ts("2026-12-03T00:00:00Z"))
    w = parse_window("week", NOW)
    assert (w.start, w.end) == (ts("2026-11-29T00:00:00Z"), NOW)  # Sunday
    lw = parse_window("lastweek", NOW)
    assert (lw.start, lw.end) == (ts("2026-11-22T00:00:00Z"), ts("2026-11-29T00:00:00Z"))
    m = parse_window("month", NOW)
    assert (m.start, m.end) == (ts("2026-12-01T00:00:00Z"), NOW)
    lm = parse_window("lastmonth", NOW)
    assert (lm.start, lm.end) == (ts("2026-11-01T00:00:00Z"), ts("2026-12-01T00:00:00Z"))


def test_offsets_and_pairs() -> None:
    w = parse_window("1h offset 1h", NOW)
    assert (w.start, w.end) == (NOW - 7200, NOW - 3600)
    assert parse_window("1700000000,1700003600", NOW).end == 1700003600
    assert parse_window("1700000000-1700003600", NOW).start == 1700000000
    w = parse_window("2026-12-01T00:00:00Z,2026-12-02T00:00:00Z", NOW)
    assert w.end - w.start == 86400


@pytest.mark.parametrize("bad", ["", "7x", "d7", "-1d", "yesterday ", "2026-12-01,2026-12-02", "1.5h"])
def test_illegal_windows_are_refused_with_opencosts_message(bad: str) -> None:
    if bad == "yesterday ":  # OpenCost does not trim; the twin does (a stray space from a shell)
        assert parse_window(bad, NOW).start == ts("2026-12-02T00:00:00Z")
        return
    with pytest.raises(WindowError, match=f"illegal window: {bad}"):
        parse_window(bad, NOW)


def test_durations() -> None:
    assert parse_duration("1h") == 3600
    assert parse_duration("1d") == 86400
    assert parse_duration("1h30m") == 5400
    for bad in ("", "h", "1x", "1h x", "0h"):
        with pytest.raises(WindowError):
            parse_duration(bad)
