"""Sampled traces follow the call graph, add up in time and mark errors where they happen."""

from __future__ import annotations

from telemetry_fixtures import build_shop, chain_health

from itbench_agents.twin.health import Symptom
from itbench_agents.twin.telemetry.sources import Span, Trace, TraceQuery

CHARGE = "oteldemo.PaymentService/Charge"
PLACE = "oteldemo.CheckoutService/PlaceOrder"
INVALID = Symptom("feature_flag_failure", "Payment request failed. Invalid token. app.loyalty.level=gold")
REFUSED = Symptom("connection_refused", "dial tcp 10.96.12.7:8080: connect: connection refused", "payment")


def by_id(t: Trace) -> dict[str, Span]:
    return {s.span_id: s for s in t.spans}


def chain(t: Trace) -> list[tuple[str, str, str]]:
    """(service, operation, kind) from the root down (the chain app has one path)."""
    spans = by_id(t)
    children = {s.parent_span_id: s for s in t.spans}
    root = next(s for s in t.spans if s.parent_span_id is None or s.parent_span_id not in spans)
    out = []
    cur: Span | None = root
    while cur is not None:
        out.append((cur.service, cur.operation, cur.span_kind))
        cur = children.get(cur.span_id)
    return out


def test_traces_follow_the_call_graph_and_timing_adds_up(shop):
    traces = shop.traces.find_traces(TraceQuery(service="frontend", limit=10))
    assert len(traces) == 10
    for t in traces:
        assert chain(t) == [
            ("load-generator", "GET /api/checkout", "client"),
            ("frontend", "GET /api/checkout", "server"),
            ("frontend", PLACE, "client"),
            ("checkout", PLACE, "server"),
            ("checkout", CHARGE, "client"),
            ("payment", CHARGE, "server"),
        ]
        spans = by_id(t)
        for s in t.spans:
            assert len(s.trace_id) == 32 and len(s.span_id) == 16 and s.trace_id == t.trace_id
            if s.parent_span_id:
                p = spans[s.parent_span_id]
                assert p.start_us <= s.start_us
                assert s.start_us + s.duration_us <= p.start_us + p.duration_us
            assert not s.error


def test_get_trace_roundtrip_and_unknown_ids(shop):
    t = shop.traces.find_traces(TraceQuery(service="payment", limit=1))[0]
    again = shop.traces.get_trace(t.trace_id)
    assert again is not None and [s.span_id for s in again.spans] == [s.span_id for s in t.spans]
    assert shop.traces.get_trace("0" * 32) is None
    assert shop.traces.get_trace("zz") is None


def test_failing_callee_marks_its_span_and_its_callers():
    twin = build_shop(history_s=300)
    t_fault = twin.now()
    twin.health.append(chain_health(t_fault, payment_err=1.0, payment_syms=(INVALID,)))
    twin.advance(600)
    traces = twin.traces.find_traces(
        TraceQuery(service="payment", tags={"error": "true"}, start_us=int(t_fault * 1e6), limit=5)
    )
    assert traces
    for t in traces:
        pay = next(s for s in t.spans if s.service == "payment")
        assert pay.error and pay.tags["otel.status_code"] == "ERROR"
        assert pay.tags["rpc.grpc.status_code"] == 13
        assert pay.logs and pay.logs[0][1]["exception.message"] == INVALID.message
        callers = [s for s in t.spans if s.service != "payment"]
        assert all(s.error for s in callers)  # the error propagates up the chain
        assert not any(s.logs for s in callers)  # but the exception event is where it started
        fe = next(s for s in t.spans if s.service == "frontend" and s.span_kind == "server")
        assert fe.tags["http.status_code"] == 500
    # before the fault: no error traces
    assert not twin.traces.find_traces(
        TraceQuery(service="payment", tags={"error": "true"}, end_us=int(t_fault * 1e6) - 60_000_000, limit=5)
    )


def test_unreachable_callee_fails_the_client_span_without_a_server_span():
    twin = build_shop(history_s=300)
    t_fault = twin.now()
    twin.health.append(chain_health(t_fault, payment_ready=0, edge_syms=(REFUSED,)))
    twin.advance(600)
    traces = twin.traces.find_traces(
        TraceQuery(service="checkout", start_us=int((t_fault + 60) * 1e6), limit=5)
    )
    assert traces
    for t in traces:
        assert not any(s.service == "payment" for s in t.spans)
        client = next(s for s in t.spans if s.operation == CHARGE)
        assert client.error and client.tags["rpc.grpc.status_code"] == 14
        assert "connection refused" in client.logs[0][1]["exception.message"]
    assert (
        twin.traces.find_traces(TraceQuery(service="payment", start_us=int((t_fault + 60) * 1e6), limit=5))
        == []
    )


def test_query_filters(shop):
    q = TraceQuery(service="payment", operation=CHARGE, min_duration_us=20_000, limit=5)
    for t in shop.traces.find_traces(q):
        assert any(
            s.service == "payment" and s.operation == CHARGE and s.duration_us >= 20_000 for s in t.spans
        )
    end = int(shop.now() * 1e6) - 600_000_000
    start = end - 300_000_000
    for t in shop.traces.find_traces(TraceQuery(service="frontend", start_us=start, end_us=end, limit=50)):
        assert start <= min(s.start_us for s in t.spans) <= end
    assert shop.traces.find_traces(TraceQuery(service="nope")) == []


def test_services_operations_dependencies(shop):
    assert shop.traces.services() == ["checkout", "frontend", "load-generator", "payment"]
    assert (CHARGE, "client") in shop.traces.operations("checkout")
    assert (PLACE, "server") in shop.traces.operations("checkout")
    assert shop.traces.operations("checkout", "server") == [(PLACE, "server")]
    deps = shop.traces.dependencies(int(shop.now() * 1000), 600_000)
    assert {(p, c) for p, c, _ in deps} == {
        ("load-generator", "frontend"),
        ("frontend", "checkout"),
        ("checkout", "payment"),
    }
    assert all(abs(n - 6000) < 10 for _, _, n in deps)  # 10 req/s × 600 s


def test_masked_traces_answer_nothing():
    twin = build_shop(history_s=300)
    twin.masked.add("traces")
    assert twin.traces.services() == []
    assert twin.traces.operations("payment") == []
    assert twin.traces.find_traces(TraceQuery(service="payment")) == []
    assert twin.traces.dependencies(int(twin.now() * 1000), 600_000) == []
    twin.masked.clear()
    t = twin.traces.find_traces(TraceQuery(service="payment", limit=1))[0]
    twin.masked.add("traces")
    assert twin.traces.get_trace(t.trace_id) is None
