"""Metric queries (matrix / vector / scalar) through real HTTP, and pipeline errors in metric queries."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from loki_fixtures import NOW, T0, build_streams

Json = dict[str, Any]


def get(loki: str, endpoint: str, **params: Any) -> requests.Response:
    return requests.get(f"{loki}/loki/api/v1/{endpoint}", params=params, timeout=10)


def data_of(resp: requests.Response) -> Json:
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "success"
    return body["data"]


def matrix(resp: requests.Response) -> dict[tuple[tuple[str, str], ...], list[tuple[float, str]]]:
    data = data_of(resp)
    assert data["resultType"] == "matrix"
    out = {}
    for series in data["result"]:
        assert set(series) == {"metric", "values"}
        for ts, v in series["values"]:
            assert isinstance(ts, int | float) and isinstance(v, str)
        out[tuple(sorted(series["metric"].items()))] = [(ts, v) for ts, v in series["values"]]
    return out


def vector(resp: requests.Response) -> dict[tuple[tuple[str, str], ...], str]:
    data = data_of(resp)
    assert data["resultType"] == "vector"
    out = {}
    for sample in data["result"]:
        assert set(sample) == {"metric", "value"}
        ts, v = sample["value"]
        assert isinstance(ts, int | float)
        out[tuple(sorted(sample["metric"].items()))] = v
    return out


CART = {"app": "cart", "container": "cart", "namespace": "otel-demo", "pod": "cart-7d9f-abcde"}
CART_KEY = tuple(sorted(CART.items()))


def test_count_over_time_matrix_shape_and_windows(loki: str) -> None:
    resp = get(
        loki, "query_range", query='count_over_time({app="cart"}[1m])', start=T0 + 60, end=T0 + 300, step=60
    )
    m = matrix(resp)
    assert list(m) == [CART_KEY]
    # windows (t-1m, t] each hold six lines (one every 10 s); timestamps are seconds
    assert m[CART_KEY] == [(T0 + 60 * k, "6") for k in range(1, 6)]
    assert "stats" in data_of(resp)


def test_rate_bytes_over_time_and_bytes_rate(loki: str) -> None:
    params = {"start": T0 + 60, "end": T0 + 60, "step": 60}
    assert matrix(get(loki, "query_range", query='rate({app="cart"}[1m])', **params))[CART_KEY] == [
        (T0 + 60, "0.1")
    ]
    cart = build_streams()[0]
    window = [line for ts, line in cart.entries if T0 * 10**9 < ts <= (T0 + 60) * 10**9]
    nbytes = sum(len(line.encode()) for line in window)
    got = matrix(get(loki, "query_range", query='bytes_over_time({app="cart"}[1m])', **params))[CART_KEY]
    assert got == [(T0 + 60, str(nbytes))]
    got = matrix(get(loki, "query_range", query='bytes_rate({app="cart"}[1m])', **params))[CART_KEY]
    assert float(got[0][1]) == pytest.approx(nbytes / 60)


def test_empty_windows_have_no_points(loki: str) -> None:
    m = matrix(
        get(
            loki,
            "query_range",
            query='count_over_time({app="cart"}[10s])',
            start=T0 + 595,
            end=T0 + 700,
            step=5,
        )
    )
    # the last line is at 590 s: (585, 595] holds it, (590, 600] no longer does
    assert [ts for ts, _ in m[CART_KEY]] == [T0 + 595]


def test_default_step_is_about_250_points(loki: str) -> None:
    m = matrix(get(loki, "query_range", query='count_over_time({app="cart"}[1m])', start=T0, end=T0 + 500))
    ts = [t for t, _ in m[CART_KEY]]
    assert ts[1] - ts[0] == 2  # 500 s / 250 = 2 s


def test_sum_by_on_parsed_labels_instant(loki: str) -> None:
    v = vector(
        get(loki, "query", query='sum by (level) (count_over_time({app="cart"} | json [5m]))', time=T0 + 300)
    )
    assert v == {(("level", "error"),): "6", (("level", "info"),): "24"}


def test_vector_aggregations(loki: str) -> None:
    base = 'count_over_time({namespace="otel-demo"}[5m])'
    t = T0 + 300

    def one(q: str) -> dict[tuple[tuple[str, str], ...], str]:
        return vector(get(loki, "query", query=q, time=t))

    assert one(f"sum by (app) ({base})") == {(("app", "cart"),): "30", (("app", "checkout"),): "15"}
    assert one(f"sum({base}) by (app)") == {(("app", "cart"),): "30", (("app", "checkout"),): "15"}
    assert one(f"sum({base})") == {(): "45"}
    assert one(f"avg({base})") == {(): "22.5"}
    assert one(f"min({base})") == {(): "15"}
    assert one(f"max({base})") == {(): "30"}
    assert one(f"count({base})") == {(): "2"}
    assert list(one(f"sum without (pod, container) ({base})")) == [
        (("app", "cart"), ("namespace", "otel-demo")),
        (("app", "checkout"), ("namespace", "otel-demo")),
    ]
    top = one(f"topk(1, sum by (app) ({base}))")
    assert top == {(("app", "cart"),): "30"}
    assert one(f"bottomk(1, sum by (app) ({base}))") == {(("app", "checkout"),): "15"}


def test_binary_operations(loki: str) -> None:
    t = T0 + 300
    base = 'sum by (app) (count_over_time({namespace="otel-demo"}[5m]))'

    def one(q: str) -> dict[tuple[tuple[str, str], ...], str]:
        return vector(get(loki, "query", query=q, time=t))

    assert one(f"{base} * 2") == {(("app", "cart"),): "60", (("app", "checkout"),): "30"}
    assert one(f"100 / {base}") == {
        (("app", "cart"),): "3.3333333333333335",
        (("app", "checkout"),): "6.666666666666667",
    }
    assert one(f"{base} > 20") == {(("app", "cart"),): "30"}
    assert one(f"{base} > bool 20") == {(("app", "cart"),): "1", (("app", "checkout"),): "0"}
    ratio = (
        'sum by (app) (count_over_time({app="cart"} |= "failed" [5m]))'
        ' / sum by (app) (count_over_time({app="cart"}[5m]))'
    )
    assert one(ratio) == {(("app", "cart"),): "0.2"}
    assert one(f'{base} and on (app) sum by (app) (count_over_time({{app="checkout"}}[5m]))') == {
        (("app", "checkout"),): "15"
    }
    assert one(f'{base} unless sum by (app) (count_over_time({{app="checkout"}}[5m]))') == {
        (("app", "cart"),): "30"
    }


def test_scalar_queries(loki: str) -> None:
    data = data_of(get(loki, "query", query="1 + 2 * 3 ^ 2", time=T0))
    assert data["resultType"] == "scalar"
    assert data["result"] == [T0, "19"]
    v = vector(get(loki, "query", query="vector(0)", time=T0))
    assert v == {(): "0"}


def test_unwrap_range_aggregation_with_grouping(loki: str) -> None:
    q = 'max_over_time({app="checkout"} | logfmt | unwrap duration(latency) [10m]) by (app)'
    assert vector(get(loki, "query", query=q, time=NOW)) == {(("app", "checkout"),): "0.2"}
    q = 'sum_over_time({app="cart"} | json | unwrap status | __error__="" [1m])'
    v = vector(get(loki, "query", query=f"sum({q})", time=T0 + 60))
    assert v == {(): str(500 + 5 * 200)}  # lines 1..6: one error (500), five OK (200)


def test_metric_query_with_parser_errors_is_refused_like_loki(loki: str) -> None:
    r = get(loki, "query", query='count_over_time({app=~"cart|checkout"} | json [5m])', time=T0 + 300)
    assert r.status_code == 400
    assert r.text.startswith("pipeline error: 'JSONParserErr' for series: '{__error__=\"JSONParserErr\"")
    assert 'Use a label filter to intentionally skip this error. (e.g | __error__!="JSONParserErr")' in r.text
    ok = get(
        loki,
        "query",
        query='sum(count_over_time({app=~"cart|checkout"} | json | __error__="" [5m]))',
        time=T0 + 300,
    )
    assert vector(ok) == {(): "30"}


def test_offset_moves_the_window(loki: str) -> None:
    v = vector(get(loki, "query", query='count_over_time({app="cart"}[1m] offset 5m)', time=NOW))
    assert v == {CART_KEY: "6"}
    v = vector(get(loki, "query", query='count_over_time({app="cart"}[1m] offset 20m)', time=NOW))
    assert v == {}


def test_label_replace(loki: str) -> None:
    q = 'label_replace(sum by (app) (count_over_time({app="cart"}[5m])), "svc", "shop-$1", "app", "(.*)")'
    assert vector(get(loki, "query", query=q, time=T0 + 300)) == {
        (("app", "cart"), ("svc", "shop-cart")): "30"
    }


def test_more_vector_aggregations(loki: str) -> None:
    base = 'sum by (app) (count_over_time({namespace="otel-demo"}[5m]))'  # cart 30, checkout 15
    t = T0 + 300
    assert vector(get(loki, "query", query=f"stddev({base})", time=t)) == {(): "7.5"}
    assert vector(get(loki, "query", query=f"stdvar({base})", time=t)) == {(): "56.25"}
    data = data_of(get(loki, "query", query=f"sort_desc({base})", time=t))
    assert {r["metric"]["app"] for r in data["result"]} == {"cart", "checkout"}


def test_vector_matching_with_ignoring_and_group_left(loki: str) -> None:
    t = T0 + 300
    per_pod = 'sum by (app, pod) (count_over_time({namespace="otel-demo"}[5m]))'
    per_app = 'sum by (app) (count_over_time({namespace="otel-demo"}[5m]))'
    got = vector(get(loki, "query", query=f"{per_pod} / ignoring (pod) group_left {per_app}", time=t))
    assert got == {
        (("app", "cart"), ("pod", "cart-7d9f-abcde")): "1",
        (("app", "checkout"), ("pod", "checkout-5c4-xyz12")): "1",
    }
    got = vector(get(loki, "query", query=f"{per_pod} / on (app) group_left {per_app}", time=t))
    assert len(got) == 2 and set(got.values()) == {"1"}
    r = get(loki, "query", query=f"{per_app} / on () {per_app}", time=t)
    assert r.status_code == 400 and "found duplicate series for the match group" in r.text


def test_absent_and_unwrapped_window_functions(loki: str) -> None:
    assert vector(get(loki, "query", query='absent_over_time({app="nope"}[1m])', time=NOW)) == {
        (("app", "nope"),): "1"
    }
    assert vector(get(loki, "query", query='absent_over_time({app="cart"}[1m])', time=NOW)) == {}
    lat = '{app="checkout"} | logfmt | drop msg, level | unwrap duration(latency)'
    # lines in (T0, T0+100 s] are 0..4 at 5, 25, 45, 65, 85 s with latencies 0 (error line), 1, 2, 3, 4 ms
    t = T0 + 100
    assert vector(get(loki, "query", query=f"first_over_time({lat} [100s])", time=t)) == {
        (
            ("app", "checkout"),
            ("container", "checkout"),
            ("namespace", "otel-demo"),
            ("pod", "checkout-5c4-xyz12"),
            ("svc", "payment"),
        ): "0"
    }
    assert vector(get(loki, "query", query=f"max(last_over_time({lat} [100s]))", time=t)) == {(): "0.004"}
    got = vector(get(loki, "query", query=f"quantile_over_time(0.5, {lat} [100s]) by (app)", time=t))
    assert got == {(("app", "checkout"),): "0.002"}
    got = vector(get(loki, "query", query=f"sum(sum_over_time({lat} [100s]))", time=t))
    assert got == {(): "0.01"}
