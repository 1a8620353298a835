"""Issue 11 on a fake twin: query limits, budgets, annotations, Prometheus-worded parse errors,
stddev/count_values/limitk/limit_ratio, the status endpoints, and the twin's lock left free
while a query evaluates."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
import pytest
from prom_fixtures import FakeTwin

from itbench_agents.twin.httpserver import Request
from itbench_agents.twin.prometheus.engine import Engine
from itbench_agents.twin.prometheus.hostile import nested
from itbench_agents.twin.prometheus.labelhash import labels_hash, xxh64
from itbench_agents.twin.prometheus.limits import MAX_DEPTH, MAX_OPERATORS, utf8_escapes
from itbench_agents.twin.prometheus.memstore import MemorySeriesSource
from itbench_agents.twin.prometheus.server import make_prometheus_handler
from itbench_agents.twin.prometheus.values import PromQLError
from itbench_dev.prometheus.conformance import run_script


@pytest.fixture(scope="module")
def api(fake_twin: FakeTwin) -> Any:
    return make_prometheus_handler(fake_twin)


def get(api: Any, path: str, **params: str) -> tuple[int, Any]:
    r = api(Request("GET", path, {k: [v] for k, v in params.items()}, {}))
    body = r.body if isinstance(r.body, bytes) else b"".join(r.body)
    try:
        return r.status, json.loads(body)
    except ValueError:
        return r.status, body.decode()


# --------------------------------------------------------------------------- limits
@pytest.mark.parametrize(
    "query, fragment",
    [
        (
            "(" * 5000,
            f"1:{MAX_DEPTH + 1}: parse error: the expression nests more than {MAX_DEPTH} levels deep",
        ),
        ("(" * 5000 + "up" + ")" * 5000, "nests more than"),
        ("-" * 3000 + "up", "nests more than"),
        (" or ".join(["up"] * 4000), f"more than {MAX_OPERATORS} binary operators"),
        ("up{a=~'" + "x" * 70_000 + "'}", "bytes long, more than the limit"),
    ],
)
def test_hostile_parses_are_refused_at_once(
    api: Any, query: str, fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused by the limit check, before the parser sees the query ("at once" whatever the
    machine's speed: a wall-clock budget failed on a busy machine, 1.46 s against 1 s)."""
    from itbench_agents.twin.prometheus import engine

    def no_parse(text: str) -> Any:
        raise AssertionError(f"the parser ran on a query the limits refuse ({len(text)} characters)")

    monkeypatch.setattr(engine.pp, "parse", no_parse)
    status, body = get(api, "/api/v1/query", query=query)
    assert status == 400 and body["errorType"] == "bad_data"
    assert body["error"].startswith('invalid parameter "query": ')
    assert fragment in body["error"]


def test_a_query_at_the_limits_still_parses(api: Any) -> None:
    status, _ = get(api, "/api/v1/query", query=" + ".join(["1"] * MAX_OPERATORS))
    assert status == 200
    status, _ = get(api, "/api/v1/query", query="(" * (MAX_DEPTH - 1) + "up" + ")" * (MAX_DEPTH - 1))
    assert status == 200


def test_form_body_over_10_mib_is_refused(api: Any) -> None:
    body = b"query=" + b"up%20or%20" * (11 * 1024 * 1024 // 10)
    r = api(Request("POST", "/api/v1/query", {}, {"content-type": "application/x-www-form-urlencoded"}, body))
    assert r.status == 400
    assert json.loads(r.body)["error"] == "error parsing form values: http: POST too large"


def test_query_timeout_is_enforced_inside_range_functions() -> None:
    """A query that needs about 19 s here (5 nested 1 h subqueries at 1 s over 50 series; one
    series took 0.5 s, too close to the budget on a fast machine) stops at the 0.3 s budget."""
    src = MemorySeriesSource()
    for i in range(50):
        src.add({"__name__": "up", "i": str(i)}, list(range(0, 7_200_000, 15_000)), [1.0] * 480)
    engine = Engine(src, timeout_s=0.3)
    t0 = time.monotonic()
    with pytest.raises(PromQLError) as err:
        engine.instant(nested(5, "up"), 7_200_000)
    assert time.monotonic() - t0 < 0.3 + 1.0
    assert (err.value.error_type, err.value.message) == (
        "timeout",
        "query timed out in expression evaluation",
    )


def test_max_samples_counts_every_point_of_a_range_query() -> None:
    src = MemorySeriesSource()
    for i in range(50):
        src.add({"__name__": "m", "i": str(i)}, list(range(0, 3_600_000, 15_000)), [1.0] * 240)
    engine = Engine(src, max_samples=100_000)
    engine.range("m", 0, 3_600_000, 60_000)  # 50 series x 61 steps: fine
    with pytest.raises(PromQLError) as err:
        engine.range("m", 0, 3_600_000, 1_000)  # 50 x 3601 points > 100,000
    assert err.value.error_type == "execution"
    assert err.value.message == "query processing would load too many samples into memory in query execution"


def test_range_points_limit_and_series_without_start(api: Any, fake_twin: FakeTwin) -> None:
    now = fake_twin.now()
    status, body = get(
        api, "/api/v1/query_range", query="up", start=str(now - 12_000), end=str(now), step="1"
    )
    assert status == 400
    assert body["error"] == (
        "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
        "resolution (?step=XX)"
    )
    a = get(api, "/api/v1/series", **{"match[]": "up"})
    b = get(api, "/api/v1/series", **{"match[]": "up", "start": "0"})
    assert a[0] == b[0] == 200 and a[1]["data"] and a == b


def test_the_twin_lock_is_free_while_a_query_evaluates(api: Any, fake_twin: FakeTwin) -> None:
    """A Kubernetes request needs ``twin.lock``; an evaluation takes it only around data fetches."""
    done = threading.Event()
    answer: list[int] = []

    def heavy() -> None:
        answer.append(get(api, "/api/v1/query", query=nested(4, "up"), timeout="3s")[0])
        done.set()

    th = threading.Thread(target=heavy)
    th.start()
    waits = []
    while not done.is_set():
        t0 = time.monotonic()
        assert fake_twin.lock.acquire(timeout=5)
        waits.append(time.monotonic() - t0)
        fake_twin.lock.release()
        time.sleep(0.01)
    th.join()
    assert answer and answer[0] in (200, 503)
    assert len(waits) >= 5
    assert max(waits) < 0.2, max(waits)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "query, error",
    # each checked against Debian's prometheus binary (same wording in 3.x)
    [
        ("foo +* bar", "1:6: parse error: unexpected <op:*>"),
        (
            "rate(foo)",
            '1:6: parse error: expected type range vector in call to function "rate", got instant vector',
        ),
        ("ln(0)", '1:4: parse error: expected type instant vector in call to function "ln", got scalar'),
        ("sum(", "1:5: parse error: unclosed left parenthesis"),
        ("foo{", "1:5: parse error: unexpected end of input inside braces"),
        ("1 +", "1:4: parse error: unexpected end of input"),
        ("abs(foo, bar)", '1:1: parse error: expected 1 argument(s) in call to "abs", got 2'),
        ("nonexistent(foo)", '1:1: parse error: unknown function with name "nonexistent"'),
        ("foo @ bar", '1:7: parse error: unexpected identifier "bar" in @, expected timestamp'),
        (  # Prometheus 3 (offset takes numbers, step() and range() too)
            "up offset",
            "1:10: parse error: unexpected end of input in offset, expected number, duration, step(), or range()",
        ),
        (
            "count_values(1, up)",
            "1:14: parse error: expected type string in aggregation parameter, got scalar",
        ),
        (
            "sum(up[5m])",
            "1:5: parse error: expected type instant vector in aggregation expression, got range vector",
        ),
        ("up{a='b}", "1:6: parse error: unterminated quoted string"),
        ("foo{a=}", '1:7: parse error: unexpected "}" in label matching, expected string'),
        ("1 and 2", '1:1: parse error: set operator "and" not allowed in binary scalar expression'),
        (
            "up > bool up[5m]",
            "1:11: parse error: binary expression must contain only scalar and instant vector types",
        ),
    ],
)
def test_parse_errors_have_prometheus_wording_and_positions(api: Any, query: str, error: str) -> None:
    status, body = get(api, "/api/v1/query", query=query)
    assert status == 400 and body["errorType"] == "bad_data"
    assert body["error"] == f'invalid parameter "query": {error}'


# --------------------------------------------------------------------------- annotations
def test_annotations_in_the_api_response(api: Any, fake_twin: FakeTwin) -> None:
    status, body = get(api, "/api/v1/query", query="rate(kube_pod_status_phase[5m])")
    assert status == 200
    assert body["infos"] == [
        "PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "
        '"kube_pod_status_phase" (1:6)'
    ]
    assert "warnings" not in body
    now = fake_twin.now()
    status, body = get(
        api, "/api/v1/query_range", query="sort(up)", start=str(now - 60), end=str(now), step="30"
    )
    assert body["warnings"] == [
        "PromQL warning: sort is ineffective for range queries since results are always ordered by labels (1:1)"
    ]
    status, body = get(api, "/api/v1/query", query="quantile(1.5, up)")
    assert body["warnings"] == ["PromQL warning: quantile value should be between 0 and 1, got 1.5 (1:10)"]
    status, body = get(api, "/api/v1/query", query="rate(traces_span_metrics_calls_total[5m])")
    assert "infos" not in body and "warnings" not in body


def test_runner_checks_annotations() -> None:
    script = """
load 1m
    foo 1+1x10
    foo_total 1+1x10

eval instant at 5m rate(foo[5m])
    expect info msg: PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "foo" (1:6)
    {} 0.016666666666666666

eval instant at 5m rate(foo[5m])
    expect no_info
    {} 0.016666666666666666

eval instant at 5m rate(foo_total[5m])
    expect warn
    {} 0.016666666666666666

eval instant at 5m rate(foo_total[5m])
    expect no_info
    expect no_warn
    {} 0.016666666666666666
"""
    rep = run_script(script, "inline")
    assert [r.status for r in rep.results] == ["pass", "fail", "fail", "pass"], [
        r.reason for r in rep.results
    ]


# --------------------------------------------------------------------------- aggregations
def test_stddev_and_stdvar_of_identical_samples_are_zero() -> None:
    src = MemorySeriesSource()
    for i in range(7):
        src.add({"__name__": "m", "i": str(i)}, [0], [0.1])
    e = Engine(src)
    for q in ("stddev(m)", "stdvar(m)"):
        assert e.instant(q, 0).vector[0][2] == 0.0


def test_count_values_and_matchers_read_byte_escapes_as_utf8() -> None:
    assert utf8_escapes(r'up{a="\xc5\xbc"}') == 'up{a="ż"}'
    assert utf8_escapes(r'up{a="\305\274z"}') == 'up{a="żz"}'
    assert utf8_escapes(r'up{a="\xff"}') == r'up{a="\xff"}'  # not UTF-8: left alone
    src = MemorySeriesSource()
    src.add({"__name__": "m", "v": "ż"}, [0], [1.0])
    e = Engine(src)
    res = e.instant(r'count_values("x", label_replace(m{v="\xc5\xbc"}, "x", "$1", "v", "(.*)"))', 0)
    assert [lb for lb, _, _ in res.vector] == [{"x": "1"}]


def test_limitk_and_limit_ratio() -> None:
    src = MemorySeriesSource()
    for g in ("a", "b"):
        for i in range(5):
            src.add({"__name__": "m", "g": g, "i": str(i)}, [0, 60_000], [float(i), float(i)])
    e = Engine(src)
    res = e.instant("limitk by (g) (2, m)", 60_000)
    assert len(res.vector) == 4
    assert sorted((lb["g"], lb["i"]) for lb, _, _ in res.vector) == [
        ("a", "0"),
        ("a", "1"),
        ("b", "0"),
        ("b", "1"),
    ]
    assert e.instant("count(limitk(0, m))", 60_000).vector == []
    keep = {json.dumps(lb, sort_keys=True) for lb, _, _ in e.instant("limit_ratio(0.3, m)", 60_000).vector}
    rest = {json.dumps(lb, sort_keys=True) for lb, _, _ in e.instant("limit_ratio(-0.7, m)", 60_000).vector}
    assert not keep & rest and len(keep | rest) == 10  # complements, by the label hash
    expected = {
        json.dumps({"__name__": "m", "g": g, "i": str(i)}, sort_keys=True)
        for g in ("a", "b")
        for i in range(5)
        if labels_hash({"__name__": "m", "g": g, "i": str(i)}) / float(2**64 - 1) < 0.3
    }
    assert keep == expected
    res = e.instant("count(limit_ratio(1.1, m))", 60_000)
    assert res.vector[0][2] == 10
    assert res.warnings == [
        "PromQL warning: ratio value should be between -1 and 1, got 1.1, capping to 1 (1:19)"
    ]


def test_label_hash_is_xxh64() -> None:
    assert xxh64(b"") == 0xEF46DB3751D8E999  # the XXH64 reference value of the empty input
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    b = b"__name__\xffm\xffg\xffa\xff"
    assert labels_hash({"g": "a", "__name__": "m"}) == xxh64(b)


# --------------------------------------------------------------------------- status endpoints
def test_status_endpoints_in_prometheus_format(api: Any) -> None:
    status, body = get(api, "/api/v1/status/buildinfo")
    assert status == 200 and body["data"]["version"].startswith("3.")
    _, body = get(api, "/api/v1/status/config")
    assert "scrape_configs:" in body["data"]["yaml"] and "evaluation_interval: 15s" in body["data"]["yaml"]
    _, body = get(api, "/api/v1/status/flags")
    assert body["data"]["query.max-samples"] == "5000000" and body["data"]["query.lookback-delta"] == "5m"
    _, body = get(api, "/api/v1/status/runtimeinfo")
    assert {"startTime", "CWD", "reloadConfigSuccess", "storageRetention", "GOMAXPROCS"} <= set(body["data"])
    _, body = get(api, "/api/v1/status/tsdb", limit="3")
    head = body["data"]["headStats"]
    assert head["numSeries"] > 0 and head["minTime"] <= head["maxTime"]
    assert len(body["data"]["seriesCountByMetricName"]) == 3
    counts = [x["value"] for x in body["data"]["seriesCountByMetricName"]]
    assert counts == sorted(counts, reverse=True)
    _, body = get(api, "/api/v1/format_query", query="sum by(a)(rate(x[5m]))+1")
    assert body == {"status": "success", "data": "sum by (a) (rate(x[5m])) + 1"}
    status, body = get(api, "/api/v1/format_query", query="sum(")
    assert status == 400 and body["errorType"] == "bad_data"
    _, body = get(api, "/api/v1/query_exemplars", query="up", start="0", end="10")
    assert body == {"status": "success", "data": []}
    status, text = get(api, "/federate", **{"match[]": "up"})
    assert status == 200 and isinstance(text, str)
    lines = text.splitlines()
    assert lines[0] == "# TYPE up untyped"
    name_labels, value, ts = lines[1].rsplit(" ", 2)
    assert name_labels.startswith("up{") and value == "1" and int(ts) > 0


def test_numpy_chunks_give_the_same_answers() -> None:
    """Splitting wide windows by steps (bounded memory, timeout checks) changes no value."""
    from itbench_agents.twin.prometheus import rangefns

    src = MemorySeriesSource()
    rng = np.random.default_rng(3)
    src.add({"__name__": "m"}, list(range(0, 7_200_000, 1000)), rng.normal(size=7200).tolist())
    e = Engine(src)
    q = "max_over_time(m[1h]) + stddev_over_time(m[1h]) + quantile_over_time(0.3, m[1h])"
    ref = e.range(q, 3_600_000, 7_200_000, 10_000).matrix[0][2]
    old = rangefns.GATHER_BUDGET
    try:
        rangefns.GATHER_BUDGET = 10_000
        got = e.range(q, 3_600_000, 7_200_000, 10_000).matrix[0][2]
    finally:
        rangefns.GATHER_BUDGET = old
    assert np.array_equal(ref, got)


def test_per_metric_locked_reads_and_the_floor_change_no_answer() -> None:
    """``LockedSource`` reads name-regex selectors one metric at a time and the server clips
    windows to the twin's creation: same series, same order, same samples as one big select."""
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.instance import Twin
    from itbench_agents.twin.prometheus.memstore import LockedSource
    from itbench_agents.twin.telemetry.sources import Matcher

    tw = Twin.for_app("otel-demo", seed=2, clock=ManualClock(), history_s=1800)
    assert tw.metrics is not None
    now = int(tw.now() * 1000)
    created = int(tw.created_at * 1000)
    locked = LockedSource(tw.metrics, tw.lock)
    for ms in ([Matcher("__name__", "=~", "kube_.+|up")], [Matcher("job", "=~", ".+")]):
        one = tw.metrics.select(ms, now - 600_000, now)
        split = locked.select(ms, now - 600_000, now)
        assert [s.labels for s in one] == [s.labels for s in split]
        assert all(
            np.array_equal(a.timestamps_ms, b.timestamps_ms)
            and np.array_equal(a.values, b.values, equal_nan=True)
            for a, b in zip(one, split, strict=True)
        )
    ms = [Matcher("__name__", "=", "up")]
    far = tw.metrics.select(ms, created - 86_400_000, now)
    clipped = tw.metrics.select(ms, created - 3_600_000, now)
    assert [s.labels for s in far] == [s.labels for s in clipped]
    assert all(np.array_equal(a.values, b.values, equal_nan=True) for a, b in zip(far, clipped, strict=True))


def test_fast_response_writer_is_byte_identical_to_json_dumps() -> None:
    from itbench_agents.twin.prometheus.values import QueryResult, success_body

    rng = np.random.default_rng(1)
    special = [0.0, -0.0, 1.0, np.nan, np.inf, -np.inf, 1e21, 1e-7, 123456789012345678.0, 5e-324]
    vals = np.concatenate([rng.normal(size=300) * 10.0 ** rng.integers(-30, 30, 300), special])
    matrix = [
        (
            {"__name__": "x", "i": str(i), "ü": 'ż"q'},
            np.arange(len(vals), dtype=np.int64) * 1500 + 17 + i,
            vals,
        )
        for i in range(3)
    ]
    results = [
        QueryResult("matrix", matrix=matrix, warnings=["w"], infos=["i"]),
        QueryResult("matrix", matrix=[({"a": "b"}, np.zeros(0, dtype=np.int64), np.zeros(0))]),
        QueryResult("vector", vector=[({"a": "b"}, 1000, 1.5)]),
        QueryResult("scalar", scalar=(1000, 2.0)),
    ]
    for r in results:
        ref: dict[str, Any] = {"status": "success", "data": r.to_json()}
        if r.warnings:
            ref["warnings"] = r.warnings
        if r.infos:
            ref["infos"] = r.infos
        assert success_body(r) == json.dumps(ref, separators=(",", ":")).encode()
    with pytest.raises(PromQLError) as err:
        success_body(results[0], deadline=time.monotonic() - 1)
    assert err.value.error_type == "timeout"


def test_a_large_matrix_is_sent_in_chunks_with_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above ``STREAM_POINTS`` the body is an iterator of chunks (no single join/encode of the
    whole body holding the GIL); joined, it is the one-piece body; the deadline is checked before
    the first chunk."""
    from itbench_agents.twin.prometheus import values
    from itbench_agents.twin.prometheus.values import QueryResult, success_body, success_chunks

    monkeypatch.setattr(values, "STREAM_POINTS", 1000)
    monkeypatch.setattr(values, "CHUNK_CHARS", 4096)
    ts = np.arange(400, dtype=np.int64) * 15000
    matrix = [({"__name__": "x", "i": str(i)}, ts, np.full(400, float(i))) for i in range(5)]
    big = QueryResult("matrix", matrix=matrix, warnings=["w"])
    chunks = success_chunks(big)
    assert not isinstance(chunks, bytes)
    parts = list(chunks)
    assert len(parts) > 5 and b"".join(parts) == success_body(big)
    small = QueryResult("matrix", matrix=matrix[:2])
    assert success_chunks(small) == success_body(small)  # 800 points: one piece
    with pytest.raises(PromQLError):
        success_chunks(big, deadline=time.monotonic() - 1)
