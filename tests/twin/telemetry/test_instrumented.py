"""Services marked ``instrumented: false`` in the app model emit no spans of their own.

Real OTel span metrics and Jaeger only know brokers, databases, flagd and the collector through
their callers' client spans; their exporter metrics and their pods' logs still exist. An external
load client (hotel-reservation's ``wrk2``) has neither pods nor spans: traces start at the first
instrumented server.
"""

from __future__ import annotations

import pytest

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.telemetry.sources import Matcher, Trace, TraceQuery

T0 = 1_767_225_600.0
CALLS = "traces_span_metrics_calls_total"


def _twin(app: str):
    try:
        from itbench_agents.twin.instance import Twin

        return Twin.for_app(app, seed=2, clock=ManualClock(T0), history_s=900)
    except (ImportError, FileNotFoundError) as e:  # pragma: no cover - other areas not present
        pytest.skip(f"the twin cannot run {app} here: {e}")


@pytest.fixture(scope="module")
def shop():
    return _twin("otel-demo")


@pytest.fixture(scope="module")
def hotel():
    return _twin("hotel-reservation")


def uninstrumented(twin) -> set[str]:
    return {n for n, s in twin.app.behaviour.services.items() if not s.instrumented}


def window(twin, seconds: float = 300.0) -> tuple[int, int]:
    return int((twin.now() - seconds) * 1000), int(twin.now() * 1000)


def span_series(twin, *matchers: Matcher):
    return twin.metrics.select([Matcher("__name__", "=", CALLS), *matchers], *window(twin))


def recent_traces(twin, service: str, limit: int = 20) -> list[Trace]:
    now = twin.now()
    q = TraceQuery(service=service, start_us=int((now - 600) * 1e6), end_us=int(now * 1e6), limit=limit)
    return twin.traces.find_traces(q)  # type: ignore[no-any-return]


def assert_well_formed(trace: Trace) -> None:
    ids = {s.span_id for s in trace.spans}
    roots = [s for s in trace.spans if s.parent_span_id is None]
    assert len(roots) == 1, [(s.service, s.operation) for s in roots]
    assert all(s.parent_span_id in ids for s in trace.spans if s.parent_span_id is not None)


def test_the_app_model_marks_brokers_and_databases(shop, hotel):
    assert {"kafka", "postgresql", "valkey-cart", "flagd", "otel-collector"} <= uninstrumented(shop)
    assert {"wrk2", "consul", "jaeger", "memcached-rate", "mongodb-geo"} <= uninstrumented(hotel)
    # the health model does see them serving (so the filter is telemetry's doing)
    snap = shop.health.at(shop.now())
    assert any(op.rate > 0 for op in snap.services["valkey-cart"].operations)


def test_span_metrics_have_no_server_spans_of_uninstrumented_services(shop):
    names = {s.labels["service_name"] for s in span_series(shop)}
    assert names, "span metrics exist"
    assert not names & uninstrumented(shop)
    # ... but the callers' client spans to them are there, with the callee's operation as span name
    cart = span_series(
        shop, Matcher("service_name", "=", "cart"), Matcher("span_kind", "=", "SPAN_KIND_CLIENT")
    )
    assert {"HGET", "HMSET", "EXPIRE"} <= {s.labels["span_name"] for s in cart}
    producer = span_series(shop, Matcher("span_name", "=", "orders publish"))
    assert {(s.labels["service_name"], s.labels["span_kind"]) for s in producer} == {
        ("checkout", "SPAN_KIND_PRODUCER")
    }
    pg = span_series(shop, Matcher("span_name", "=", "postgresql"))
    assert pg and all(s.labels["span_kind"] == "SPAN_KIND_CLIENT" for s in pg)
    buckets = shop.metrics.select(
        [
            Matcher("__name__", "=", "traces_span_metrics_duration_milliseconds_bucket"),
            Matcher("service_name", "=~", "kafka|valkey-cart|postgresql"),
        ],
        *window(shop),
    )
    assert buckets == []


def test_exporter_metrics_and_logs_of_uninstrumented_services_remain(shop):
    for metric in ("redis_up", "pg_up", "kafka_consumergroup_lag"):
        got = shop.metrics.select([Matcher("__name__", "=", metric)], *window(shop))
        assert got, metric
    pods = shop.metrics.select(
        [
            Matcher("__name__", "=", "kube_pod_info"),
            Matcher("pod", "=~", "(kafka|valkey-cart|postgresql)-.*"),
        ],
        *window(shop),
    )
    assert len(pods) == 3
    start_ns = int((T0 - 60) * 1e9)
    streams = shop.logs.streams(
        [Matcher("app", "=~", "kafka|valkey-cart|postgresql")], start_ns, int(shop.now() * 1e9)
    )
    assert {s.labels["app"] for s in streams if s.entries} == {"kafka", "valkey-cart", "postgresql"}


def test_jaeger_lists_only_instrumented_services(shop):
    services = set(shop.traces.services())
    assert {"frontend", "cart", "checkout", "payment", "load-generator"} <= services
    assert not services & uninstrumented(shop)
    assert shop.traces.operations("valkey-cart") == []
    assert shop.traces.operations("kafka") == []
    assert ("HGET", "client") in shop.traces.operations("cart")
    assert recent_traces(shop, "postgresql") == []
    deps = shop.traces.dependencies(int(shop.now() * 1000), 600_000)
    assert deps and all(p not in uninstrumented(shop) and c not in uninstrumented(shop) for p, c, _ in deps)
    assert ("cart", "valkey-cart") not in {(p, c) for p, c, _ in deps}
    assert ("frontend", "cart") in {(p, c) for p, c, _ in deps}


def test_traces_show_uninstrumented_peers_only_as_client_spans(shop):
    traces = recent_traces(shop, "cart")
    assert traces
    hidden = uninstrumented(shop)
    peers = set()
    for t in traces:
        assert_well_formed(t)
        assert not {s.service for s in t.spans} & hidden
        for s in t.spans:
            if (
                s.service == "cart"
                and s.span_kind == "client"
                and s.tags.get("server.address") == "valkey-cart"
            ):
                assert s.tags["db.system"] == "redis"
                assert not [c for c in t.spans if c.parent_span_id == s.span_id], "no server span below"
                peers.add(s.operation)
    assert peers & {"HGET", "HMSET", "EXPIRE"}
    for t in recent_traces(shop, "checkout", limit=5):
        for s in t.spans:
            if s.operation == "orders publish":
                assert (s.service, s.span_kind, s.tags.get("messaging.system")) == (
                    "checkout",
                    "producer",
                    "kafka",
                )
    ids = [t.trace_id for t in traces[:3]]
    for tid in ids:  # get_trace regenerates the same filtered trace
        again = shop.traces.get_trace(tid)
        assert again is not None
        assert [s.span_id for s in again.spans] == [
            s.span_id for s in next(t for t in traces if t.trace_id == tid).spans
        ]


def test_external_load_client_has_no_pods_series_logs_or_spans(hotel):
    from itbench_agents.k8s.kinds import GroupResource

    assert not [p for p in hotel.store.list(GroupResource("", "pods"), "") if "wrk2" in p["metadata"]["name"]]
    everything = hotel.metrics.select([Matcher("__name__", "=~", ".+")], *window(hotel, 60))
    assert everything and not [s.labels for s in everything if "wrk2" in s.labels.values()]
    assert not hotel.logs.streams([Matcher("app", "=", "wrk2")], int(T0 * 1e9), int(hotel.now() * 1e9))
    assert "wrk2" not in hotel.traces.services()
    # frontend still gets (and reports) the load: its server spans are the traces' roots
    frontend = span_series(
        hotel, Matcher("service_name", "=", "frontend"), Matcher("span_kind", "=", "SPAN_KIND_SERVER")
    )
    assert frontend and sum(s.values[-1] - s.values[0] for s in frontend) > 0
    traces = recent_traces(hotel, "frontend", limit=10)
    assert traces
    for t in traces:
        assert_well_formed(t)
        (root,) = [s for s in t.spans if s.parent_span_id is None]
        assert (root.service, root.span_kind) == ("frontend", "server")
        assert not {s.service for s in t.spans} & uninstrumented(hotel)
    deps = hotel.traces.dependencies(int(hotel.now() * 1000), 600_000)
    assert deps and not [d for d in deps if "wrk2" in d[:2]]
