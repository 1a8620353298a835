"""Jaeger's query API through real HTTP: services, operations, trace search and lookup, dependencies."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jaeger_fixtures import NOW_US, SEC, SHORT_ID_TRACE, T0_US, build_traces, checkout_trace

from itbench_agents.twin.jaeger.lint import check_trace_query
from itbench_agents.twin.jaeger.memory import InMemoryTraceSource

Json = dict[str, Any]


def get(base: str, path: str, params: Any = None) -> requests.Response:
    return requests.get(f"{base}{path}", params=params, timeout=10)


def data(resp: requests.Response) -> Any:
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert set(body) == {"data", "total", "limit", "offset", "errors"}
    assert body["errors"] is None and body["limit"] == 0 and body["offset"] == 0
    if isinstance(body["data"], list):
        assert body["total"] == len(body["data"])
    return body["data"]


def error(resp: requests.Response, code: int) -> str:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["data"] is None and body["total"] == 0
    (err,) = body["errors"]
    assert err["code"] == code
    return str(err["msg"])


def trace_ids(resp: requests.Response) -> list[str]:
    return [t["traceID"] for t in data(resp)]


def test_services_and_operations(jaeger: str) -> None:
    assert data(get(jaeger, "/api/services")) == ["cart", "checkout", "frontend", "payment"]
    assert data(get(jaeger, "/api/services/cart/operations")) == ["HGET", "oteldemo.CartService/GetCart"]
    assert data(get(jaeger, "/api/services/unknown/operations")) == []
    assert data(get(jaeger, "/api/operations", {"service": "frontend"})) == [
        {"name": "GET /api/cart", "spanKind": "server"},
        {"name": "POST /api/checkout", "spanKind": "server"},
        {"name": "oteldemo.CartService/GetCart", "spanKind": "client"},
    ]
    assert data(get(jaeger, "/api/operations", {"service": "frontend", "spanKind": "client"})) == [
        {"name": "oteldemo.CartService/GetCart", "spanKind": "client"}
    ]
    assert error(get(jaeger, "/api/operations"), 400) == "parameter 'service' is required"


def test_search_returns_most_recent_first_with_limit(jaeger: str) -> None:
    got = data(get(jaeger, "/api/traces", {"service": "frontend"}))
    assert len(got) == 13
    starts = [min(s["startTime"] for s in t["spans"]) for t in got]
    assert starts == sorted(starts, reverse=True)
    top3 = data(get(jaeger, "/api/traces", {"service": "frontend", "limit": "3"}))
    assert [min(s["startTime"] for s in t["spans"]) - T0_US for t in top3] == [
        540 * SEC,
        420 * SEC,
        360 * SEC,
    ]


def test_search_by_operation_tags_and_logs(jaeger: str) -> None:
    def count(**params: str) -> int:
        return len(data(get(jaeger, "/api/traces", params)))

    assert count(service="frontend", operation="POST /api/checkout") == 4
    assert count(service="frontend", tags=json.dumps({"error": "true"})) == 4
    assert count(service="frontend", tag="error:true") == 4
    assert count(service="frontend", tag="http.status_code:500") == 4
    assert count(service="checkout", tags=json.dumps({"exception.message": "context deadline exceeded"})) == 4
    assert count(service="cart", tag="k8s.pod.name:cart-0") == 9  # process tags
    assert count(service="cart", tag="k8s.pod.name:frontend-0") == 0
    assert count(service="payment", tag="app.payment.amount:12.5") == 4


def test_search_by_duration_and_time(jaeger: str) -> None:
    def count(**params: Any) -> int:
        return len(data(get(jaeger, "/api/traces", params)))

    assert count(service="frontend", minDuration="1s") == 4
    assert count(service="frontend", maxDuration="100ms") == 9
    assert count(service="payment", minDuration="1.5s", maxDuration="3s") == 4
    assert count(service="frontend", start=T0_US + 100 * SEC, end=T0_US + 200 * SEC) == 3
    assert count(service="frontend", end=T0_US + 600 * SEC, lookback="5m") == 4
    assert count(service="frontend", end=T0_US + 600 * SEC, lookback="custom", start=T0_US + 500 * SEC) == 1


def test_trace_json_shape(jaeger: str) -> None:
    tid = checkout_trace(0).trace_id
    (trace,) = data(get(jaeger, f"/api/traces/{tid}"))
    assert trace["traceID"] == tid and trace["warnings"] is None
    assert {p["serviceName"] for p in trace["processes"].values()} == {"frontend", "checkout", "payment"}
    assert set(trace["processes"]) == {"p1", "p2", "p3"}
    spans = {s["operationName"]: s for s in trace["spans"]}
    root = spans["POST /api/checkout"]
    assert root["references"] == []
    place = spans["oteldemo.CheckoutService/PlaceOrder"]
    assert place["references"] == [{"refType": "CHILD_OF", "traceID": tid, "spanID": root["spanID"]}]
    assert trace["processes"][place["processID"]]["serviceName"] == "checkout"
    tags = {t["key"]: t for t in root["tags"]}
    assert tags["error"] == {"key": "error", "type": "bool", "value": True}
    assert tags["http.status_code"] == {"key": "http.status_code", "type": "int64", "value": 500}
    assert tags["span.kind"] == {"key": "span.kind", "type": "string", "value": "server"}
    amount = {t["key"]: t for t in spans["oteldemo.PaymentService/Charge"]["tags"]}["app.payment.amount"]
    assert amount == {"key": "app.payment.amount", "type": "float64", "value": 12.5}
    (log,) = place["logs"]
    assert {"key": "exception.message", "type": "string", "value": "context deadline exceeded"} in log[
        "fields"
    ]
    assert place["duration"] == 2_400_000 and isinstance(place["startTime"], int)
    proc_tags = {t["key"]: t["value"] for t in trace["processes"][place["processID"]]["tags"]}
    assert proc_tags["k8s.pod.name"] == "checkout-0"


def test_get_trace_by_id(jaeger: str) -> None:
    tid = checkout_trace(1).trace_id
    assert trace_ids(get(jaeger, f"/api/traces/{tid.upper()}")) == [tid]
    assert trace_ids(get(jaeger, "/api/traces/abc")) == [SHORT_ID_TRACE]  # leading zeros may be left out
    assert error(get(jaeger, "/api/traces/ffffffff"), 404) == "trace not found"
    assert error(get(jaeger, "/api/traces/xyz"), 400) == 'strconv.ParseUint: parsing "xyz": invalid syntax'
    long_id = "1" * 33
    assert error(get(jaeger, f"/api/traces/{long_id}"), 400) == (
        f"TraceID cannot be longer than 32 hex characters: {long_id}"
    )
    both = trace_ids(get(jaeger, "/api/traces", [("traceID", tid), ("traceID", SHORT_ID_TRACE)]))
    assert both == [tid, SHORT_ID_TRACE]


def test_dependencies(jaeger: str) -> None:
    end_ms = (T0_US + 600 * SEC) // 1000
    deps = data(get(jaeger, "/api/dependencies", {"endTs": end_ms, "lookback": 600_000}))
    assert deps == [
        {"parent": "checkout", "child": "payment", "callCount": 4},
        {"parent": "frontend", "child": "cart", "callCount": 9},
        {"parent": "frontend", "child": "checkout", "callCount": 4},
    ]
    last_minute = data(get(jaeger, "/api/dependencies", {"endTs": end_ms, "lookback": 60_000}))
    assert last_minute == [{"parent": "frontend", "child": "cart", "callCount": 1}]
    assert len(data(get(jaeger, "/api/dependencies"))) == 3  # defaults: now, 24 h


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "parameter 'service' is required"),
        ({"service": "cart", "minDuration": "abc"}, 'cannot parse minDuration: time: invalid duration "abc"'),
        (
            {"service": "cart", "maxDuration": "10"},
            'cannot parse maxDuration: time: missing unit in duration "10"',
        ),
        (
            {"service": "cart", "minDuration": "2s", "maxDuration": "1s"},
            "'maxDuration' should be greater than 'minDuration'",
        ),
        ({"service": "cart", "limit": "x"}, 'strconv.ParseInt: parsing "x": invalid syntax'),
        ({"service": "cart", "start": "abc"}, 'strconv.ParseInt: parsing "abc": invalid syntax'),
        (
            {"service": "cart", "tag": "novalue"},
            "malformed 'tag' parameter, expecting key:value, received: novalue",
        ),
    ],
)
def test_search_errors_in_jaegers_format(jaeger: str, params: dict[str, str], message: str) -> None:
    assert error(get(jaeger, "/api/traces", params), 400) == message


def test_malformed_tags_json(jaeger: str) -> None:
    msg = error(get(jaeger, "/api/traces", {"service": "cart", "tags": "{nope"}), 400)
    assert msg.startswith("malformed 'tags' parameter, cannot unmarshal JSON")
    msg = error(get(jaeger, "/api/dependencies", {"lookback": "x"}), 400)
    assert msg == 'cannot parse lookback: strconv.ParseInt: parsing "x": invalid syntax'


def test_masked_traces_answer_with_nothing(masked_jaeger: str) -> None:
    assert data(get(masked_jaeger, "/api/services")) == []
    assert data(get(masked_jaeger, "/api/services/cart/operations")) == []
    assert data(get(masked_jaeger, "/api/operations", {"service": "cart"})) == []
    assert data(get(masked_jaeger, "/api/traces", {"service": "frontend"})) == []
    assert data(get(masked_jaeger, "/api/dependencies")) == []
    assert error(get(masked_jaeger, f"/api/traces/{checkout_trace(0).trace_id}"), 404) == "trace not found"


def test_twin_without_traces_is_empty_not_broken(bare_jaeger: str) -> None:
    assert data(get(bare_jaeger, "/api/services")) == []
    assert data(get(bare_jaeger, "/api/traces", {"service": "cart"})) == []


def test_unknown_paths_and_methods(jaeger: str) -> None:
    assert get(jaeger, "/api/nope").status_code == 404
    assert requests.post(f"{jaeger}/api/services", timeout=10).status_code == 405


def test_trace_name_lint() -> None:
    src = InMemoryTraceSource(build_traces())
    assert check_trace_query(src, "cart", "HGET") is None
    assert check_trace_query(src, "cart") is None
    msg = check_trace_query(src, "cartservice")
    assert msg is not None and msg.startswith("service 'cartservice' not found in Jaeger.")
    assert "Known services: cart, checkout, frontend, payment." in msg and "Did you mean: cart" in msg
    msg = check_trace_query(src, "cart", "GetCart")
    assert msg == (
        "operation 'GetCart' not found for service 'cart'. Known operations: HGET, oteldemo.CartService/GetCart."
    )
    assert check_trace_query(src, "") == "a service name is required to search traces"
    assert check_trace_query(None, "cart") == "traces are not available in this environment"


_values = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["1s", "-1s", "1.5ms", "0", "1e99", "99999999999999999999", "{}", '{"a":1}', "[]", "a:b"]
    ),
)
_search = st.dictionaries(
    st.sampled_from(
        [
            "service",
            "operation",
            "tags",
            "tag",
            "minDuration",
            "maxDuration",
            "start",
            "end",
            "limit",
            "lookback",
            "traceID",
        ]
    ),
    _values,
    max_size=6,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=_search, path=st.sampled_from(["/api/traces", "/api/dependencies", "/api/operations"]))
def test_fuzzed_searches_never_crash(jaeger: str, params: dict[str, str], path: str) -> None:
    r = get(jaeger, path, params)
    assert r.status_code in (200, 400), (params, r.status_code, r.text[:300])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.text(alphabet="0123456789abcdefABCDEFxyz%/-_ ", max_size=40))
def test_fuzzed_trace_ids_never_crash(jaeger: str, raw: str) -> None:
    r = requests.get(f"{jaeger}/api/traces/{requests.utils.quote(raw, safe='')}", timeout=10)
    assert r.status_code in (200, 400, 404), (raw, r.status_code, r.text[:300])


def test_server_alive_after_fuzzing(jaeger: str) -> None:
    assert data(get(jaeger, "/api/services"))
    assert NOW_US > T0_US
