"""``select`` renders series that share an existence interval as one block; the answer must be the
same, byte for byte (staleness markers included), as selecting each series on its own."""

from __future__ import annotations

import numpy as np
from telemetry_fixtures import NS, PODS, T0, build_shop, make_pod, running_status, update

from itbench_agents.twin.telemetry.sources import Matcher, Series, is_stale


def one_by_one(twin, series: list[Series], start_ms: int, end_ms: int) -> list[Series]:
    names = {k for s in series for k in s.labels}
    out = []
    for s in series:
        exact = [Matcher(k, "=", s.labels.get(k, "")) for k in sorted(names)]  # absent labels = ""
        (alone,) = twin.metrics.select(exact, start_ms, end_ms)
        out.append(alone)
    return out


def test_block_rendering_equals_rendering_each_series_alone():
    twin = build_shop(history_s=600)
    pod = make_pod("cart-5f6d7c8b9-xyzab", "cart")
    twin.store.create(PODS, pod)
    twin.advance(40)
    update(twin, PODS, running_status(pod, twin.now()))
    twin.advance(200)
    t_deleted = twin.now()
    twin.store.delete(PODS, NS, pod["metadata"]["name"])
    twin.advance(200)
    now = twin.now()
    windows = [
        (T0, now),
        (T0 - 300, now),
        (t_deleted - 100, t_deleted + 50),
        (now - 14, now),
        (T0 + 7, T0 + 301),
    ]
    stale_seen = 0
    for a, b in windows:
        start_ms, end_ms = int(a * 1000), int(b * 1000)
        bulk = twin.metrics.select([Matcher("__name__", "=~", ".+")], start_ms, end_ms)
        assert len(bulk) > 50
        for got, ref in zip(bulk, one_by_one(twin, bulk, start_ms, end_ms), strict=True):
            assert got.labels == ref.labels
            assert np.array_equal(got.timestamps_ms, ref.timestamps_ms)
            assert got.values.tobytes() == ref.values.tobytes(), got.labels
            stale_seen += sum(is_stale(float(v)) for v in got.values)
    assert stale_seen > 0, "the deleted pod's series end inside some windows"


def test_series_own_their_arrays():
    twin = build_shop(history_s=300)
    start_ms, end_ms = int(T0 * 1000), int(twin.now() * 1000)
    ms = [Matcher("__name__", "=", "traces_span_metrics_duration_milliseconds_bucket")]
    first = twin.metrics.select(ms, start_ms, end_ms)
    before = [(s.timestamps_ms.copy(), s.values.copy()) for s in first]
    assert len(first) > 2
    first[0].timestamps_ms[:] = 0  # a consumer scribbling on one series of its answer...
    first[0].values[:] = -1.0
    for s, (ts, vals) in zip(first[1:], before[1:], strict=True):  # ...changes no other series
        assert np.array_equal(s.timestamps_ms, ts) and np.array_equal(s.values, vals)
    for s in first:
        s.timestamps_ms[:] = 0
        s.values[:] = -1.0
    again = twin.metrics.select(ms, start_ms, end_ms)  # ...nor the next answer
    for s, (ts, vals) in zip(again, before, strict=True):
        assert np.array_equal(s.timestamps_ms, ts) and np.array_equal(s.values, vals)
