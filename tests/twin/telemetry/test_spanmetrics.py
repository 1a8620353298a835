"""Span-metrics counters follow the health timeline: monotone, right rate, errors, latency buckets."""

from __future__ import annotations

import numpy as np
from telemetry_fixtures import T0, build_shop, chain_health

from itbench_agents.twin.telemetry.sources import Matcher, Series
from itbench_agents.twin.telemetry.spanmetrics import BUCKETS_MS

CALLS = "traces_span_metrics_calls_total"
BUCKET = "traces_span_metrics_duration_milliseconds_bucket"
CHARGE = "oteldemo.PaymentService/Charge"


def sel(twin, name: str, start: float, end: float, **labels: str) -> list[Series]:
    ms = [Matcher("__name__", "=", name), *(Matcher(k, "=", v) for k, v in labels.items())]
    return twin.metrics.select(ms, int(start * 1000), int(end * 1000))


def value_at(s: Series, t: float) -> float:
    i = int(np.searchsorted(s.timestamps_ms, int(t * 1000), side="right")) - 1
    return float(s.values[i])


def test_counters_are_monotone_integers_on_the_scrape_grid(shop):
    series = sel(shop, CALLS, T0, shop.now()) + sel(shop, BUCKET, T0, shop.now())
    assert len(series) == 6 + 6 * (len(BUCKETS_MS) + 1)
    for s in series:
        assert np.all(np.diff(s.values) >= 0), s.labels
        assert np.all(s.values == np.floor(s.values))
        assert np.all(s.timestamps_ms % 15_000 == 0)
        assert s.timestamps_ms[-1] <= shop.now() * 1000


def test_rate_matches_health_rate(shop):
    (s,) = sel(shop, CALLS, T0, shop.now(), service_name="payment", span_kind="SPAN_KIND_SERVER")
    now = shop.now() // 15 * 15
    long_rate = (value_at(s, now) - value_at(s, now - 1800)) / 1800
    assert abs(long_rate - 10.0) < 0.1
    short = [(value_at(s, t) - value_at(s, t - 120)) / 120 for t in np.arange(now - 1200, now, 60)]
    assert all(abs(r - 10.0) < 1.0 for r in short)
    assert np.std(short) > 0  # noisy like real traffic, not a straight line


def test_error_series_appears_with_errors_and_ratio_is_visible():
    twin = build_shop(history_s=600)
    t_fault = twin.now()
    assert sel(twin, CALLS, T0, t_fault, service_name="payment", status_code="STATUS_CODE_ERROR") == []
    twin.health.append(chain_health(t_fault, payment_err=0.25))
    twin.advance(900)
    (err,) = sel(twin, CALLS, T0, twin.now(), service_name="payment", status_code="STATUS_CODE_ERROR")
    (ok,) = sel(
        twin,
        CALLS,
        T0,
        twin.now(),
        service_name="payment",
        span_kind="SPAN_KIND_SERVER",
        status_code="STATUS_CODE_UNSET",
    )
    assert err.timestamps_ms[0] >= t_fault * 1000  # the series is born with the first error
    end = twin.now() // 15 * 15
    d_err = value_at(err, end) - value_at(err, end - 300)
    d_ok = value_at(ok, end) - value_at(ok, end - 300)
    assert abs(d_err / (d_err + d_ok) - 0.25) < 0.03
    # errors propagate to the callers' series too (health says so)
    assert sel(twin, CALLS, T0, twin.now(), service_name="frontend", status_code="STATUS_CODE_ERROR")


def _quantile(q: float, buckets: dict[float, float]) -> float:
    """Prometheus' histogram_quantile over cumulative bucket counts."""
    les = sorted(buckets)
    total = buckets[les[-1]]
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le in les:
        c = buckets[le]
        if c >= rank:
            if np.isinf(le):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_c) / max(c - prev_c, 1e-9)
        prev_le, prev_c = le, c
    return les[-2]


def test_p95_and_median_from_buckets(shop):
    end = shop.now() // 15 * 15
    series = sel(shop, BUCKET, T0, shop.now(), service_name="payment", span_kind="SPAN_KIND_SERVER")
    inc = {float(s.labels["le"]): value_at(s, end) - value_at(s, end - 300) for s in series}
    p95 = _quantile(0.95, inc)
    p50 = _quantile(0.5, inc)
    assert 300 * 0.75 < p95 < 300 * 1.3  # health p95 = 300 ms; bucket interpolation error allowed
    assert 2.5 < p50 < 8  # health median = 5 ms (bucket 4..6)
    # buckets are cumulative and never exceed _count
    cnt = sel(
        shop,
        "traces_span_metrics_duration_milliseconds_count",
        T0,
        shop.now(),
        service_name="payment",
        span_kind="SPAN_KIND_SERVER",
    )[0]
    les = sorted(series, key=lambda s: float(s.labels["le"]))
    stacked = np.vstack([s.values for s in les])
    assert np.all(np.diff(stacked, axis=0) >= 0)
    assert np.array_equal(les[-1].values, cnt.values)


def test_latency_change_moves_p95():
    twin = build_shop(history_s=600)
    twin.health.append(chain_health(twin.now(), p95_scale=10.0))
    twin.advance(600)
    end = twin.now() // 15 * 15
    series = sel(twin, BUCKET, T0, twin.now(), service_name="payment", span_kind="SPAN_KIND_SERVER")
    inc = {float(s.labels["le"]): value_at(s, end) - value_at(s, end - 300) for s in series}
    assert 2000 < _quantile(0.95, inc) < 5000  # 3 s


def test_labels_and_metadata(shop):
    m = shop.metrics
    meta = m.metadata()
    assert meta[CALLS].type == "counter"
    assert meta[BUCKET].type == "histogram"
    assert meta["kube_pod_status_phase"].type == "gauge"
    names = m.label_names(int(T0 * 1000), int(shop.now() * 1000), [Matcher("__name__", "=", CALLS)])
    assert {"service_name", "span_name", "span_kind", "status_code", "namespace", "job"} <= set(names)
    assert m.label_values("service_name", int(T0 * 1000), int(shop.now() * 1000)) == [
        "checkout",
        "frontend",
        "load-generator",
        "payment",
    ]


def test_no_samples_in_the_future(shop):
    out = sel(shop, CALLS, shop.now() + 60, shop.now() + 600)
    assert out == []


def test_metric_names_listed_only_when_series_exist(shop):
    names = shop.metrics.label_values("__name__", int(T0 * 1000), int(shop.now() * 1000))
    assert "traces_span_metrics_calls_total" in names and "kube_pod_status_phase" in names
    assert "kube_statefulset_replicas" not in names  # no StatefulSet in this cluster
    assert "kube_statefulset_replicas" in shop.metrics.metadata()  # but its metadata is known


def test_incremental_profiles_equal_a_fresh_build():
    from itbench_agents.twin.telemetry.hub import install_telemetry

    twin = build_shop(history_s=300)
    q = [Matcher("__name__", "=~", "traces_span_metrics_.*")]

    def dump(src):
        return sorted(
            (tuple(sorted(s.labels.items())), s.timestamps_ms.tobytes(), s.values.tobytes())
            for s in src.select(q, int(T0 * 1000), int(twin.now() * 1000))
        )

    live = twin.metrics
    dump(live)  # build once, then extend the timeline
    twin.health.append(chain_health(twin.now(), payment_err=0.3))
    twin.advance(120)
    dump(live)
    twin.health.append(chain_health(twin.now(), payment_err=0.6))
    twin.health.append(chain_health(twin.now(), payment_err=0.9))  # same time: replaces the last
    twin.advance(120)
    twin.health.append(chain_health(twin.now(), p95_scale=3.0))
    twin.advance(120)
    incremental = dump(live)
    install_telemetry(twin)  # a fresh context builds everything from scratch
    assert dump(twin.metrics) == incremental
