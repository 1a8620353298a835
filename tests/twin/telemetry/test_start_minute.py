"""A twin started at another wall-clock minute tells the same story, shifted: every random-looking
number is keyed on time since the twin's birth (``noise.ms_since``), not since 1970. Before, the
same seed drew other noise at each minute a run started, and an alert could fire 30 s earlier or
later (``frontend-http-delay``: 60 s at one minute, 90 s at another)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from itbench_agents.twin.clock import VirtualClock
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.telemetry.sources import Matcher, TraceQuery

BORN = 1_796_467_860.0  # 2026-12-05T10:51:00Z: a minute at which a control once false-alerted
LATER = BORN + 37 * 60 + 4 * 3600  # another minute, another hour
HISTORY_S = 600.0
TIME_VALUED = re.compile(r"(_time_seconds|_created|_timestamp_seconds|_boot_time_seconds|_start_time)$")


def twin_born_at(t: float) -> Twin:
    return Twin.for_app("otel-demo", seed=11, clock=VirtualClock.paused_at(t), history_s=HISTORY_S)


@pytest.fixture(scope="module")
def pair() -> tuple[Twin, Twin]:
    return twin_born_at(BORN), twin_born_at(LATER)


def series_by_labels(twin: Twin) -> dict[tuple[tuple[str, str], ...], tuple[np.ndarray, np.ndarray]]:
    assert twin.metrics is not None
    start, end = int(twin.created_at * 1000), int(twin.now() * 1000)
    out = {}
    for s in twin.metrics.select([Matcher("__name__", "=~", ".+")], start, end):
        key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "uid"))
        out[key] = (s.timestamps_ms - start, s.values)
    return out


def test_the_same_series_with_the_same_values_at_the_same_moments(pair: tuple[Twin, Twin]) -> None:
    a, b = pair
    delta = b.created_at - a.created_at
    sa, sb = series_by_labels(a), series_by_labels(b)
    assert sa.keys() == sb.keys() and len(sa) > 500
    noisy = 0
    for key, (ta, va) in sa.items():
        tb, vb = sb[key]
        assert np.array_equal(ta, tb), key
        if np.array_equal(va, vb, equal_nan=True):
            noisy += key[0][0] == "__name__" and "traces_span_metrics" in key[0][1]
            continue
        name = dict(key)["__name__"]
        # a value that is a time (a start, a creation) moves with the clock, and only by the shift
        assert TIME_VALUED.search(name), (name, va[:3], vb[:3])
        assert np.allclose(vb - va, delta, rtol=0, atol=1e-6), name
    assert noisy > 50  # span metrics (their jittered counters) among what matched exactly


def test_the_same_log_lines_and_traces(pair: tuple[Twin, Twin]) -> None:
    a, b = pair
    delta_ns = int((b.created_at - a.created_at) * 1e9)
    assert a.logs is not None and b.logs is not None
    sel = [Matcher("namespace", "=", "otel-demo")]

    def lines(twin: Twin) -> dict[str, list[tuple[int, str]]]:
        assert twin.logs is not None
        start = int(twin.created_at * 1e9)
        return {
            repr(sorted(st.labels.items())): [
                (ts - start, re.sub(r"\d", "#", line)) for ts, line in st.entries
            ]
            for st in twin.logs.streams(sel, start, int(twin.now() * 1e9))
        }

    la, lb = lines(a), lines(b)
    assert la == lb and sum(map(len, la.values())) > 1000
    assert a.traces is not None and b.traces is not None
    q = TraceQuery(service="frontend", limit=20)
    ta, tb = a.traces.find_traces(q), b.traces.find_traces(q)
    assert ta and [t.trace_id for t in ta] == [t.trace_id for t in tb]
    shift_us = delta_ns // 1000
    assert [[(s.span_id, s.start_us + shift_us, s.duration_us) for s in t.spans] for t in ta] == [
        [(s.span_id, s.start_us, s.duration_us) for s in t.spans] for t in tb
    ]
    assert b.traces.get_trace(tb[0].trace_id) is not None


def test_itbench_twin_serve_serves_the_same_history_at_any_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    """``itbench twin serve`` builds its history on a paused clock from a whole minute, as an
    episode does, then lets the cluster's time run: two served at other minutes hold the same past."""
    import time

    from itbench_agents.twin import clock, serve

    pasts = []
    for wall_at_start in (BORN + 23.7, LATER + 41.2):
        t0 = time.time()
        monkeypatch.setattr(
            clock, "scaled_wall", lambda speed, w=wall_at_start, t0=t0: lambda: w + time.time() - t0
        )
        with serve.running_twin(app="hotel-reservation", history_s=HISTORY_S) as twin:
            assert twin.created_at % 60 == 0 and not twin.clock.paused  # type: ignore[attr-defined]
            assert twin.metrics is not None
            start = int(twin.created_at * 1000)
            end = start + int(HISTORY_S * 1000)
            pasts.append(
                {
                    tuple(sorted((k, v) for k, v in s.labels.items() if k != "uid")): (
                        (s.timestamps_ms - start).tobytes(),
                        s.values.tobytes(),
                    )
                    for s in twin.metrics.select(
                        [Matcher("__name__", "=~", "container_.*|traces_.*")], start, end
                    )
                    if not TIME_VALUED.search(s.labels["__name__"])  # a start time moves with the clock
                }
            )
    assert pasts[0] and pasts[0] == pasts[1]
