"""rate/increase/delta on range vectors whose series share (or do not share) timestamp arrays.

The vectorised ``rangefns.extrapolated`` computes window bounds and extrapolation once per group of
series scraped together; these tests compare it with the plain per-series implementation
(``functions._extrapolated``) on random data with shared and private timestamps, counter resets,
counters starting near zero (extrapolation stops at zero), empty series and NaN samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from itbench_agents.twin.prometheus import functions, rangefns
from itbench_agents.twin.prometheus.values import RangeVector, RSeries, Vector


class _Ev:
    def __init__(self, rv: RangeVector) -> None:
        self.rv = rv

    def eval_range(self, node: Any, steps: np.ndarray) -> RangeVector:
        return self.rv


def _random_rv(rng: np.random.Generator, resets: bool) -> RangeVector:
    ends = np.sort(rng.choice(np.arange(0, 600_000, 1000), size=int(rng.integers(1, 40)), replace=False))
    shared = [np.sort(rng.choice(600_000, size=int(rng.integers(1, 60)), replace=False)) for _ in range(2)]
    series = []
    for i in range(int(rng.integers(1, 15))):
        r = rng.random()
        if r < 0.6:
            ts = shared[i % 2]
        elif r < 0.9:
            ts = np.sort(rng.choice(600_000, size=int(rng.integers(1, 60)), replace=False))
        else:
            ts = np.array([], dtype=np.int64)
        steps = rng.choice([0.0, 1.0, 2.5, 0.1], size=len(ts))
        if resets:
            steps = np.where(rng.random(len(ts)) < 0.1, -50.0, steps)
        v = np.cumsum(steps) + float(rng.choice([0.0, 0.5, 100.0]))
        if len(v) and rng.random() < 0.15:
            v[int(rng.integers(len(v)))] = np.nan
        series.append(RSeries({"i": str(i)}, ts.astype(np.int64), v.astype(np.float64)))
    if all(len(s.ts) == 0 for s in series):
        series.append(RSeries({"i": "x"}, shared[0].astype(np.int64), np.arange(len(shared[0]), dtype=float)))
    return RangeVector(series, ends.astype(np.int64), int(rng.choice([15_000, 60_000, 120_000, 300_000])))


def _as_dict(v: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    assert isinstance(v, Vector)
    return {s.labels["i"]: (s.values, s.present) for s in v.series}


@pytest.mark.parametrize("kind", ["rate", "increase", "delta"])
@pytest.mark.parametrize("resets", [False, True])
def test_grouped_extrapolation_matches_per_series(kind: str, resets: bool) -> None:
    rng = np.random.default_rng(7 + resets)
    reference = functions._extrapolated(kind)
    steps = np.zeros(1, dtype=np.int64)
    for _ in range(150):
        rv = _random_rv(rng, resets)
        got = _as_dict(rangefns.extrapolated(rv, kind != "delta", kind == "rate"))
        want = _as_dict(reference(_Ev(rv), [None], steps))  # type: ignore[arg-type]
        assert got.keys() == want.keys()
        for k, (wv, wp) in want.items():
            gv, gp = got[k]
            assert np.array_equal(gp, wp), k
            # (reset corrections are per window in both, in sample order: the very same floats)
            np.testing.assert_array_equal(gv[gp], wv[wp])


def test_groups_are_exact_timestamp_matches() -> None:
    ts = np.array([1000, 2000, 3000], dtype=np.int64)
    rv = RangeVector(
        [
            RSeries({"i": "a"}, ts, np.array([1.0, 2.0, 3.0])),
            RSeries({"i": "b"}, ts.copy(), np.array([5.0, 6.0, 9.0])),
            RSeries({"i": "c"}, ts + 1, np.array([1.0, 2.0, 3.0])),
        ],
        np.array([3000, 4000], dtype=np.int64),
        3000,
    )
    f = rangefns.flatten(rv)
    assert f.group.tolist() == [0, 0, 1]
    assert f.lo.tolist() == [[0, 1], [3, 4], [6, 6]]
    assert f.hi.tolist() == [[3, 3], [6, 6], [8, 9]]
