"""Integration: a real twin running the small ``chain`` app serves its logs through Loki and traces
through Jaeger (skips while the app model or the telemetry part of the twin is not there)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.jaeger.server import make_jaeger_handler
from itbench_agents.twin.loki.server import make_loki_handler

START = 1_767_225_600.0
HISTORY_S = 600.0


def _twin(**kw: Any) -> Any:
    if importlib.util.find_spec("itbench_agents.twin.telemetry.hub") is None:
        pytest.skip("twin telemetry (twin/telemetry/hub.py: install_telemetry) is not there yet")
    from itbench_agents.twin.instance import Twin

    try:
        return Twin.for_app("chain", seed=0, clock=ManualClock(START), history_s=HISTORY_S, **kw)
    except (ImportError, LookupError, FileNotFoundError) as exc:
        pytest.skip(f"the chain app cannot be deployed on the twin yet: {exc}")


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, str, str]]:
    twin = _twin()
    loki = HttpEndpoint(make_loki_handler(twin)).start()
    jaeger = HttpEndpoint(make_jaeger_handler(twin)).start()
    try:
        yield twin, loki.url, jaeger.url
    finally:
        loki.stop()
        jaeger.stop()
        twin.close()


def test_loki_serves_the_twins_pod_logs(served: tuple[Any, str, str]) -> None:
    twin, loki, _ = served
    labels = requests.get(f"{loki}/loki/api/v1/labels", timeout=10).json()["data"]
    assert {"namespace", "app", "pod"} <= set(labels)
    apps = requests.get(f"{loki}/loki/api/v1/label/app/values", timeout=10).json()["data"]
    assert {"a", "b", "c"} <= set(apps)
    r = requests.get(
        f"{loki}/loki/api/v1/query_range",
        params={"query": '{namespace="chain", app="b"}', "limit": 10},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    (stream,) = r.json()["data"]["result"]
    stamps = [int(ts) for ts, _ in stream["values"]]
    assert len(stamps) == 10 and stamps == sorted(stamps, reverse=True)
    assert int(twin.now() * 1e9) - HISTORY_S * 1e9 <= stamps[-1] <= stamps[0] <= int(twin.now() * 1e9)
    assert stream["stream"]["app"] == "b"


def test_logql_metric_query_over_twin_logs(served: tuple[Any, str, str]) -> None:
    _, loki, _ = served
    q = 'sum by (app) (count_over_time({namespace="chain"}[5m]))'
    r = requests.get(f"{loki}/loki/api/v1/query", params={"query": q}, timeout=10)
    assert r.status_code == 200, r.text
    result = {s["metric"].get("app"): float(s["value"][1]) for s in r.json()["data"]["result"]}
    assert {"a", "b", "c"} <= set(result) and all(v > 0 for v in result.values())


def test_jaeger_serves_the_twins_traces(served: tuple[Any, str, str]) -> None:
    _, _, jaeger = served
    services = requests.get(f"{jaeger}/api/services", timeout=10).json()["data"]
    assert {"a", "b", "c"} <= set(services)
    traces = requests.get(f"{jaeger}/api/traces", params={"service": "b", "limit": 3}, timeout=10).json()[
        "data"
    ]
    assert 1 <= len(traces) <= 3
    for t in traces:
        ids = {s["spanID"] for s in t["spans"]}
        for s in t["spans"]:
            assert s["processID"] in t["processes"]
            for ref in s["references"]:
                assert (
                    ref["refType"] == "CHILD_OF" and ref["traceID"] == t["traceID"] and ref["spanID"] in ids
                )
    one = requests.get(f"{jaeger}/api/traces/{traces[0]['traceID']}", timeout=10).json()["data"]
    assert one[0]["traceID"] == traces[0]["traceID"]
    deps = requests.get(f"{jaeger}/api/dependencies", timeout=10).json()["data"]
    assert {(d["parent"], d["child"]) for d in deps} >= {("a", "b"), ("b", "c")}


def test_masked_twin_has_no_traces_but_the_same_logs(served: tuple[Any, str, str]) -> None:
    twin, loki, _ = served
    masked = _twin(masked={"traces"})
    try:
        mj = HttpEndpoint(make_jaeger_handler(masked)).start()
        ml = HttpEndpoint(make_loki_handler(masked)).start()
        try:
            assert requests.get(f"{mj.url}/api/services", timeout=10).json()["data"] == []
            params = {
                "query": '{namespace="chain"} |= "GET"',
                "limit": 50,
                "end": str(int(START + HISTORY_S)),
            }
            a = requests.get(f"{loki}/loki/api/v1/query_range", params=params, timeout=10).content
            b = requests.get(f"{ml.url}/loki/api/v1/query_range", params=params, timeout=10).content
            assert a == b  # same seed, same virtual time: byte-identical answers
        finally:
            mj.stop()
            ml.stop()
    finally:
        masked.close()
