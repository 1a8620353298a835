"""The Prometheus HTTP API served by the twin: real clients, JSON shapes, errors, fuzzing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itbench_agents.paths import scenarios_dir
from itbench_agents.twin.httpserver import HttpEndpoint, Request
from itbench_agents.twin.prometheus.alerts import AlertEngine, load_rules
from itbench_agents.twin.prometheus.server import make_prometheus_handler


@pytest.fixture(scope="module")
def twin() -> Any:
    from prom_fixtures import FakeTwin

    t = FakeTwin(now=FakeTwin().sc.start_s + 2900)  # inside the payment error burst
    t.alerts = AlertEngine(
        lambda: t.metrics, load_rules(scenarios_dir() / "rules"), start=t.created_at, lock=t.lock
    )
    return t


@pytest.fixture(scope="module")
def url(twin: Any) -> Iterator[str]:
    ep = HttpEndpoint(make_prometheus_handler(twin)).start()
    yield ep.url
    ep.stop()


def test_prometheus_api_client_queries(url: str, twin: Any) -> None:
    from prometheus_api_client import PrometheusConnect

    pc = PrometheusConnect(url=url, disable_ssl=True)
    assert pc.check_prometheus_connection()
    res = pc.custom_query(
        'sum by (service_name) (rate(traces_span_metrics_calls_total{service_name="payment"}[5m]))'
    )
    assert len(res) == 1 and res[0]["metric"] == {"service_name": "payment"}
    assert float(res[0]["value"][1]) > 1.0
    assert res[0]["value"][0] == twin.now()  # default time = the twin's now
    names = pc.all_metrics()
    assert "traces_span_metrics_calls_total" in names and "kube_pod_status_phase" in names
    from datetime import datetime

    end = datetime.fromtimestamp(twin.now(), UTC)
    start = datetime.fromtimestamp(twin.now() - 600, UTC)
    rng = pc.custom_query_range("sum(kafka_consumergroup_lag)", start_time=start, end_time=end, step="60")
    assert len(rng) == 1 and len(rng[0]["values"]) == 11


def test_query_range_post_form_and_json_shape(url: str, twin: Any) -> None:
    t = twin.now()
    r = requests.post(
        f"{url}/api/v1/query_range",
        data={"query": "kafka_consumergroup_lag > 50", "start": str(t - 300), "end": str(t), "step": "15s"},
        timeout=10,
    )
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "success" and body["data"]["resultType"] == "matrix"
    series = body["data"]["result"]
    assert series and all(s["metric"]["consumergroup"] == "accounting" for s in series)
    assert all(isinstance(v[1], str) and isinstance(v[0], float | int) for s in series for v in s["values"])


def test_scalar_and_string_results(url: str) -> None:
    body = requests.get(f"{url}/api/v1/query", params={"query": "1 + 2", "time": "100"}, timeout=10).json()
    assert body["data"] == {"resultType": "scalar", "result": [100, "3"]}
    body = requests.get(f"{url}/api/v1/query", params={"query": '"hi"', "time": "2"}, timeout=10).json()
    assert body["data"] == {"resultType": "string", "result": [2, "hi"]}


@pytest.mark.parametrize(
    ("params", "status", "etype", "needle"),
    [
        ({"query": "sum(rate(x[5m]"}, 400, "bad_data", 'invalid parameter "query"'),
        ({"query": ""}, 400, "bad_data", "no expression found"),
        ({"query": "up", "time": "yesterday"}, 400, "bad_data", 'invalid parameter "time"'),
        ({"query": "rate(up)"}, 400, "bad_data", 'expected type range vector in call to function "rate"'),
    ],
)
def test_query_errors(url: str, params: dict[str, str], status: int, etype: str, needle: str) -> None:
    r = requests.get(f"{url}/api/v1/query", params=params, timeout=10)
    assert r.status_code == status
    body = r.json()
    assert body["status"] == "error" and body["errorType"] == etype and needle in body["error"]


def test_range_limits(url: str) -> None:
    r = requests.get(
        f"{url}/api/v1/query_range",
        params={"query": "up", "start": "0", "end": "100000", "step": "1"},
        timeout=10,
    )
    assert r.status_code == 400
    assert r.json()["error"] == (
        "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"
    )
    r = requests.get(
        f"{url}/api/v1/query_range",
        params={"query": "up", "start": "10", "end": "0", "step": "1"},
        timeout=10,
    )
    assert r.status_code == 400 and "end timestamp must not be before start time" in r.json()["error"]
    r = requests.get(
        f"{url}/api/v1/query_range",
        params={"query": "up", "start": "0", "end": "10", "step": "0"},
        timeout=10,
    )
    assert r.status_code == 400 and "zero or negative query resolution step" in r.json()["error"]


def test_execution_error_is_422(url: str) -> None:
    q = "traces_span_metrics_calls_total + on (service_name) traces_span_metrics_calls_total"
    r = requests.get(f"{url}/api/v1/query", params={"query": q}, timeout=10)
    assert r.status_code == 422
    assert r.json()["errorType"] == "execution"


def test_bounded_cost_queries_are_refused(twin: Any) -> None:
    api = make_prometheus_handler(twin)
    q = "sum(rate(traces_span_metrics_calls_total[1h:1ms]))"  # 3.6 M subquery steps
    resp = api(Request("GET", "/api/v1/query", {"query": [q]}, {}))
    assert resp.status == 422
    assert b"too many samples" in resp.body  # type: ignore[operator]


def test_time_budget_is_a_timeout_error(twin: Any) -> None:
    import numpy as np
    import promql_parser

    from itbench_agents.twin.prometheus.engine import Evaluator
    from itbench_agents.twin.prometheus.values import PromQLError

    ev = Evaluator(twin.metrics, 0, 0, deadline=0.0)  # a deadline already passed
    with pytest.raises(PromQLError) as exc:
        ev.eval(promql_parser.parse("up"), np.array([0], dtype=np.int64))
    assert exc.value.error_type == "timeout"
    from itbench_agents.twin.prometheus.api_params import STATUS

    assert STATUS["timeout"] == 503


def test_series_labels_values_metadata(url: str) -> None:
    r = requests.get(
        f"{url}/api/v1/series", params={"match[]": 'kube_pod_status_phase{phase="Pending"}'}, timeout=10
    )
    data = r.json()["data"]
    assert data and all(s["__name__"] == "kube_pod_status_phase" and s["phase"] == "Pending" for s in data)
    r = requests.get(f"{url}/api/v1/series", timeout=10)
    assert r.status_code == 400 and r.json()["error"] == "no match[] parameter provided"
    labels = requests.get(f"{url}/api/v1/labels", timeout=10).json()["data"]
    assert {"__name__", "service_name", "namespace", "pod"} <= set(labels)
    vals = requests.get(f"{url}/api/v1/label/service_name/values", timeout=10).json()["data"]
    assert "payment" in vals and vals == sorted(vals)
    meta = requests.get(
        f"{url}/api/v1/metadata", params={"metric": "kube_pod_status_phase"}, timeout=10
    ).json()["data"]
    assert meta == {
        "kube_pod_status_phase": [{"type": "gauge", "help": "kube_pod_status_phase (synthetic)", "unit": ""}]
    }


def test_targets_from_up_series(url: str) -> None:
    from prometheus_api_client import PrometheusConnect

    targets = PrometheusConnect(url=url, disable_ssl=True).get_scrape_pools()
    assert "otel-demo/payment" in targets
    data = requests.get(f"{url}/api/v1/targets", timeout=10).json()["data"]
    pay = next(t for t in data["activeTargets"] if t["scrapePool"] == "otel-demo/payment")
    assert pay["health"] == "up" and pay["labels"] == {"job": "otel-demo/payment", "instance": "payment:9464"}
    meta = requests.get(f"{url}/api/v1/targets/metadata", params={"metric": "up"}, timeout=10).json()["data"]
    assert meta and all(m["metric"] == "up" and m["type"] == "gauge" for m in meta)


def test_ready_buildinfo_and_unknown(url: str) -> None:
    assert requests.get(f"{url}/-/ready", timeout=10).text == "Prometheus Server is Ready.\n"
    assert requests.get(f"{url}/-/healthy", timeout=10).status_code == 200
    assert requests.get(f"{url}/api/v1/status/buildinfo", timeout=10).json()["data"]["version"]
    assert requests.get(f"{url}/api/v1/nope", timeout=10).status_code == 404
    assert requests.delete(f"{url}/api/v1/query", timeout=10).status_code == 405


def test_alerts_rules_and_alertmanager(url: str, twin: Any) -> None:
    alerts = requests.get(f"{url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    by_name = {(a["labels"]["alertname"], a["labels"].get("service_name")): a for a in alerts}
    err = by_name[("HighRequestErrorRate", "payment")]
    assert err["state"] == "firing" and err["labels"]["severity"] == "warning"
    assert "payment" in err["annotations"]["summary"]
    assert ("HighRequestErrorRate", "flagd") not in by_name  # excluded like ITBench
    rules = requests.get(f"{url}/api/v1/rules", timeout=10).json()["data"]["groups"]
    names = {r["name"] for g in rules for r in g["rules"]}
    assert {
        "HighRequestErrorRate",
        "HighRequestLatency",
        "FailedPodsDetected",
        "PendingPodsDetected",
        "KafkaConsumerGroupInactive",
        "HighKafkaConsumerLag",
        "NoRequestsReceived",
    } <= names
    assert all(r["type"] == "alerting" and r["health"] == "ok" for g in rules for r in g["rules"])
    am = requests.get(f"{url}/api/v2/alerts", timeout=10).json()
    assert any(a["labels"]["alertname"] == "HighRequestErrorRate" for a in am)
    assert all(a["status"]["state"] == "active" for a in am)
    am = requests.get(
        f"{url}/api/v2/alerts", params={"filter": 'alertname="HighRequestErrorRate"'}, timeout=10
    ).json()
    assert am and {a["labels"]["alertname"] for a in am} == {"HighRequestErrorRate"}


def test_the_alert_waits_question_evaluates_the_expected_rules_only() -> None:
    """``firing_alerts(url, names)`` asks ``/api/v1/rules?type=alert&rule_name[]=...``: the firing
    alerts of those rules, as ``/api/v1/alerts`` shows them; the twin evaluates only those rules."""
    from prom_fixtures import FakeTwin

    from itbench_agents.harness.firing import firing_alerts

    t = FakeTwin(now=FakeTwin().sc.start_s + 2900)
    t.alerts = AlertEngine(
        lambda: t.metrics, load_rules(scenarios_dir() / "rules"), start=t.created_at, lock=t.lock
    )
    ep = HttpEndpoint(make_prometheus_handler(t)).start()
    try:
        names = {"HighRequestErrorRate", "NoSuchRule"}
        named = firing_alerts(ep.url, names)
        assert named and {a["labels"]["alertname"] for a in named} == {"HighRequestErrorRate"}
        assert all(st.last_evaluation is None for st in t.alerts.states if st.rule.alert not in names)
        assert firing_alerts(ep.url, set()) == []
        every = firing_alerts(ep.url)
        assert named == [a for a in every if a["labels"]["alertname"] in names]
        assert {a["labels"]["alertname"] for a in every} > {"HighRequestErrorRate"}
    finally:
        ep.stop()


def test_a_prometheus_that_ignores_rule_name_still_gives_the_named_alerts_only() -> None:
    """Before Prometheus 2.46 ``rule_name[]`` is ignored and every rule comes back: the client keeps
    the named rules' firing alerts, never a pending one."""
    from itbench_agents.harness.alert_wait import alerting_rules
    from itbench_agents.harness.firing import firing_alerts
    from itbench_agents.twin.httpserver import Response

    def alert(name: str, state: str) -> dict[str, Any]:
        return {
            "labels": {"alertname": name},
            "state": state,
            "activeAt": "2026-01-01T00:00:00Z",
            "value": "1",
        }

    rules = [
        {"name": n, "type": "alerting", "duration": 60, "alerts": [alert(n, s)]}
        for n, s in (("A", "firing"), ("B", "firing"), ("C", "pending"))
    ]
    body = {"status": "success", "data": {"groups": [{"name": "g", "file": "f", "rules": rules}]}}
    ep = HttpEndpoint(lambda req: Response.json(body)).start()
    try:
        assert firing_alerts(ep.url, {"A", "C"}) == [alert("A", "firing")]
        assert [r["name"] for r in alerting_rules(ep.url, names={"B", "C"})] == ["B", "C"]
        assert [r["name"] for r in alerting_rules(ep.url)] == ["A", "B", "C"]
    finally:
        ep.stop()


def test_every_request_syncs(url: str, twin: Any) -> None:
    before = twin.syncs
    requests.get(f"{url}/api/v1/query", params={"query": "1"}, timeout=10)
    assert twin.syncs == before + 1


_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
_PROMQLISH = st.lists(
    st.sampled_from(
        [
            "sum",
            "(",
            ")",
            "rate",
            "[5m]",
            "[1h:1s]",
            "{",
            "}",
            'a="b"',
            ",",
            "by",
            "up",
            "+",
            "/",
            "offset",
            "1m",
            "@",
            "-1",
            "topk",
            "0.5",
            "histogram_quantile",
            "kafka_consumergroup_lag",
            "==",
            "bool",
            "or",
            "on",
            "le",
            '"',
            "'",
            "x",
            "1e308",
            "NaN",
            "Inf",
            "start()",
            "[",
            "]",
            ":",
            "absent",
            "label_replace",
            "info",
            "anchored",
            "smoothed",
            "step()",
            "min_of",
            "fill(0)",
            "group_left",
            "*",
            "2m",
            "%",
            "^",
        ]
    ),
    max_size=14,
).map(" ".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(
        [
            "/api/v1/query",
            "/api/v1/query_range",
            "/api/v1/series",
            "/api/v1/labels",
            "/api/v1/label/service_name/values",
            "/api/v1/label/x%2Fy/values",
            "/api/v1/metadata",
        ]
    ),
    query=st.one_of(_TEXT, _PROMQLISH),
    time=st.one_of(st.none(), _TEXT, st.floats(allow_nan=True, allow_infinity=True).map(str)),
    step=st.one_of(st.none(), _TEXT, st.sampled_from(["15s", "0", "-1", "1e-9", "1e30", "abc"])),
    method=st.sampled_from(["GET", "POST"]),
)
def test_fuzz_query_endpoints_never_500(
    twin: Any, path: str, query: str, time: Any, step: Any, method: str
) -> None:
    api = make_prometheus_handler(twin)
    params: dict[str, list[str]] = {"query": [query], "match[]": [query]}
    if time is not None:
        params["time"] = [time]
        params["start"] = [time]
        params["end"] = [time]
    if step is not None:
        params["step"] = [step]
    params["timeout"] = ["2s"]
    resp = api(Request(method, path, params, {}))
    assert resp.status in (200, 400, 404, 405, 422, 503), resp.body


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/api/v1/query", {"query": ["up"], "time": ["1e300"]}, 400),
        (
            "/api/v1/query_range",
            {"query": ["up"], "start": ["-1e300"], "end": ["1e300"], "step": ["1e299"]},
            400,
        ),
        ("/api/v1/query", {"query": ["x @ 1e300"]}, 422),
        ("/api/v1/query", {"query": ["x[9999999y]"]}, 422),
        ("/api/v1/query", {"query": ['x{a=~"("}']}, 400),
        # a regex that makes a backtracking engine explode: matched with RE2, answers at once
        ("/api/v1/query", {"query": ['traces_span_metrics_calls_total{service_name=~"(a+)+b"}']}, 200),
        ("/api/v1/query", {"query": ['label_replace(vector(1), "a", "$1", "b", "(a+)+$")']}, 200),
    ],
)
def test_extreme_inputs_get_prometheus_errors(
    twin: Any, path: str, params: dict[str, list[str]], status: int
) -> None:
    resp = make_prometheus_handler(twin)(Request("GET", path, params, {}))
    assert resp.status == status, resp.body


def test_alerts_series(url: str, twin: Any) -> None:
    body = requests.get(
        f"{url}/api/v1/query", params={"query": 'ALERTS{alertstate="firing"}'}, timeout=10
    ).json()
    names = {(r["metric"]["alertname"], r["metric"].get("service_name")) for r in body["data"]["result"]}
    assert ("HighRequestErrorRate", "payment") in names
    assert all(r["value"][1] == "1" for r in body["data"]["result"])
    t = twin.now()
    q = 'ALERTS{alertname="HighRequestErrorRate", service_name="payment"}'
    rng = requests.get(
        f"{url}/api/v1/query_range", params={"query": q, "start": t - 900, "end": t, "step": 15}, timeout=10
    ).json()["data"]["result"]
    states = {r["metric"]["alertstate"]: [float(v[0]) for v in r["values"]] for r in rng}
    assert max(states["pending"]) < min(states["firing"])  # pending for 1 m, then firing
    assert min(states["firing"]) - min(states["pending"]) == 60
    fs = requests.get(
        f"{url}/api/v1/query",
        params={
            "query": "time() - ALERTS_FOR_STATE{alertname='HighRequestErrorRate', service_name='payment'}"
        },
        timeout=10,
    )
    assert fs.status_code == 200
    (res,) = fs.json()["data"]["result"]
    assert float(res["value"][1]) > 60  # active for longer than its for: duration
