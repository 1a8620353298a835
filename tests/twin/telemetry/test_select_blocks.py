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


def shop_with_a_deleted_pod(after_s: float):
    """The shop, a cart pod that ran 200 s and was deleted ``after_s`` ago: (twin, when deleted)."""
    twin = build_shop(history_s=600)
    pod = make_pod("cart-5f6d7c8b9-xyzab", "cart")
    twin.store.create(PODS, pod)
    twin.advance(40)
    update(twin, PODS, running_status(pod, twin.now()))
    twin.advance(200)
    t_deleted = twin.now()
    twin.store.delete(PODS, NS, pod["metadata"]["name"])
    twin.advance(after_s)
    return twin, t_deleted


def test_block_rendering_equals_rendering_each_series_alone():
    twin, t_deleted = shop_with_a_deleted_pod(200)
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


def test_selecting_windows_equals_select_over_their_span_cut_to_them():
    """``select_windows`` (the PromQL engine's fetch of an instant selector at sparse steps): the
    series and the order ``select`` over the windows' whole span gives, with exactly its samples
    inside the windows — staleness markers of a pod deleted between and inside windows included,
    and a window past the clock."""
    twin, t_deleted = shop_with_a_deleted_pod(400)
    now = twin.now()
    ms = lambda t: int(t * 1000)  # noqa: E731
    layouts = [
        [(T0, T0 + 60), (t_deleted - 100, t_deleted - 40), (now - 60, now + 120)],  # ends in a gap
        [(T0 + 7, T0 + 37), (t_deleted - 20, t_deleted + 50), (now - 14, now)],  # ends inside one
        [(t_deleted + 5, t_deleted + 7)],  # no scrape time inside
    ]
    stale_seen = 0
    for layout in layouts:
        windows = [(ms(a), ms(b)) for a, b in layout]
        full = twin.metrics.select([Matcher("__name__", "=~", ".+")], windows[0][0], windows[-1][1])
        expected = []
        for s in full:
            inside = np.zeros(len(s.timestamps_ms), dtype=bool)
            for a, b in windows:
                inside |= (s.timestamps_ms >= a) & (s.timestamps_ms <= b)
            if inside.any():
                expected.append((s.labels, s.timestamps_ms[inside].tolist(), s.values[inside].tobytes()))
        got = twin.metrics.select_windows([Matcher("__name__", "=~", ".+")], windows)
        assert [(s.labels, s.timestamps_ms.tolist(), s.values.tobytes()) for s in got] == expected
        stale_seen += sum(is_stale(float(v)) for s in got for v in s.values)
    assert stale_seen > 0, "the deleted pod's series end inside a window"
