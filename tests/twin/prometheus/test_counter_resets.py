"""Counter-reset corrections of rate/increase are per window, like Prometheus' extrapolatedRate.

Prometheus adds, for each window, the value before every drop inside that window to
``last - first`` (in sample order). These tests check that no other series or window leaks into
a window's correction: an ``+Inf`` sample followed by a lower value must not turn other series
(or later windows) into NaN, and a window's result must be exactly what the per-window arithmetic
gives (no ``1e-17`` left over where Prometheus returns ``0``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from itbench_agents.twin.prometheus import rangefns
from itbench_agents.twin.prometheus.values import RangeVector, RSeries, Vector


@pytest.fixture(params=["grouped", "flat"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run ``rangefns.extrapolated`` through its per-timestamp-group path or its flat path."""
    flat = request.param == "flat"
    monkeypatch.setattr(rangefns, "_flat_is_faster", lambda f: flat)
    return str(request.param)


def _reference(rv: RangeVector, is_counter: bool, is_rate: bool) -> dict[str, list[float | None]]:
    """Prometheus' extrapolatedRate, one window at a time, in plain Python floats."""
    out: dict[str, list[float | None]] = {}
    range_s = rv.range_ms / 1000.0
    for s in rv.series:
        row: list[float | None] = []
        for end in rv.ends.tolist():
            start = end - rv.range_ms
            pts = [(int(t), float(v)) for t, v in zip(s.ts, s.vals, strict=True) if start < t <= end]
            if len(pts) < 2:
                row.append(None)
                continue
            (first_t, first_v), (last_t, last_v) = pts[0], pts[-1]
            result = last_v - first_v
            if is_counter:
                result += 0.0  # (the engine normalises -0.0 to 0.0)
                prev = first_v
                for _, cur in pts[1:]:
                    if cur < prev:
                        result += prev
                    prev = cur
            dur_start = (first_t - start) / 1000.0
            dur_end = (end - last_t) / 1000.0
            sampled = (last_t - first_t) / 1000.0
            avg = sampled / (len(pts) - 1)
            if dur_start >= avg * 1.1:
                dur_start = avg / 2
            if is_counter and result > 0 and first_v >= 0:
                to_zero = sampled * (first_v / result)
                if to_zero < dur_start:
                    dur_start = to_zero
            if dur_end >= avg * 1.1:
                dur_end = avg / 2
            factor = (sampled + dur_start + dur_end) / sampled
            if is_rate:
                factor /= range_s
            row.append(result * factor)
        if any(x is not None for x in row):
            out[s.labels["i"]] = row
    return out


def _got(v: object) -> dict[str, list[float | None]]:
    assert isinstance(v, Vector)
    return {
        s.labels["i"]: [float(x) if p else None for x, p in zip(s.values, s.present, strict=True)]
        for s in v.series
    }


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or a == b


def _assert_exact(got: dict[str, list[float | None]], want: dict[str, list[float | None]]) -> None:
    assert got.keys() == want.keys()
    for k, w in want.items():
        assert all(_same(a, b) for a, b in zip(got[k], w, strict=True)), (k, got[k], w)


def _rv(series: dict[str, list[float]], ends: list[int], range_ms: int, step_ms: int = 1000) -> RangeVector:
    rs = []
    for name, vals in series.items():
        ts = np.arange(1, len(vals) + 1, dtype=np.int64) * step_ms
        rs.append(RSeries({"i": name}, ts, np.asarray(vals, dtype=np.float64)))
    return RangeVector(rs, np.asarray(ends, dtype=np.int64), range_ms)


def test_reset_to_zero_then_flat_gives_exactly_zero(path: str) -> None:
    # an earlier drop (0.1) makes a running sum of drops inexact for the later 0.2 -> 0 reset
    rv = _rv({"a": [0.1, 0.0, 0.1, 0.2, 0.0, 0.0, 0.0]}, ends=[7000], range_ms=3500)
    # window (3.5s, 7s]: samples 0.2, 0.0, 0.0, 0.0 -> (0 - 0.2) + 0.2 == 0 exactly
    for is_rate in (False, True):
        got = _got(rangefns.extrapolated(rv, True, is_rate))
        assert got["a"] == [0.0]


def test_inf_followed_by_lower_value_stays_in_its_window(path: str) -> None:
    rv = _rv(
        {
            "a": [1.0, math.inf, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
            "b": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        },
        ends=[3000, 5000, 8000],
        range_ms=2500,
    )
    got = _got(rangefns.extrapolated(rv, True, True))
    # the window holding the Inf -> 5 drop is +Inf, like Prometheus; later windows are finite
    assert got["a"][0] == math.inf
    assert got["a"][2] is not None and math.isfinite(got["a"][2])
    assert all(x is not None and math.isfinite(x) for x in got["b"])
    _assert_exact(got, _reference(rv, True, True))


def _random_rv(rng: np.random.Generator) -> RangeVector:
    ends = np.sort(rng.choice(np.arange(0, 400_000, 1000), size=int(rng.integers(1, 30)), replace=False))
    shared = [np.sort(rng.choice(400_000, size=int(rng.integers(2, 50)), replace=False)) for _ in range(2)]
    series = []
    for i in range(int(rng.integers(1, 10))):
        if rng.random() < 0.6:
            ts = shared[i % 2]
        else:
            ts = np.sort(rng.choice(400_000, size=int(rng.integers(1, 50)), replace=False))
        inc = rng.choice([0.0, 0.1, 0.2, 0.7, 1.3], size=len(ts))
        v = np.cumsum(inc) + float(rng.choice([0.0, 0.3, 1e6]))
        # resets: back to zero or to a small value, sometimes several per window
        for j in np.flatnonzero(rng.random(len(ts)) < 0.15):
            v[j:] -= v[j] - float(rng.choice([0.0, 0.1, 0.2]))
        if len(v) and rng.random() < 0.1:
            v[int(rng.integers(len(v)))] = math.inf
        if len(v) and rng.random() < 0.1:
            v[int(rng.integers(len(v)))] = math.nan
        series.append(RSeries({"i": str(i)}, ts.astype(np.int64), v.astype(np.float64)))
    return RangeVector(series, ends.astype(np.int64), int(rng.choice([5_000, 30_000, 60_000, 120_000])))


@pytest.mark.parametrize(("is_counter", "is_rate"), [(True, True), (True, False), (False, False)])
def test_matches_per_window_reference_on_random_resets(is_counter: bool, is_rate: bool, path: str) -> None:
    rng = np.random.default_rng(11)
    for _ in range(150):
        rv = _random_rv(rng)
        _assert_exact(
            _got(rangefns.extrapolated(rv, is_counter, is_rate)), _reference(rv, is_counter, is_rate)
        )


def test_resets_counts_drops_per_window() -> None:
    rng = np.random.default_rng(5)
    for _ in range(100):
        rv = _random_rv(rng)
        got = _got(rangefns.count_pairs(rv, "resets"))
        want: dict[str, list[float | None]] = {}
        for s in rv.series:
            row: list[float | None] = []
            for end in rv.ends.tolist():
                w = [float(v) for t, v in zip(s.ts, s.vals, strict=True) if end - rv.range_ms < t <= end]
                row.append(float(sum(b < a for a, b in zip(w, w[1:], strict=False))) if w else None)
            if any(x is not None for x in row):
                want[s.labels["i"]] = row
        _assert_exact(got, want)
