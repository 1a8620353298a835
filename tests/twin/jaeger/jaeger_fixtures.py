"""Fixed traces of a small shop (ok cart calls, failing checkouts) and a stand-in twin for Jaeger tests."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from itbench_agents.twin.telemetry.sources import Span, Trace, TraceSource

T0_US = 1_767_225_600 * 1_000_000  # 2026-01-01T00:00:00Z
SEC = 1_000_000
NOW_US = T0_US + 600 * SEC


def _pt(service: str) -> dict[str, str]:
    return {"k8s.pod.name": f"{service}-0", "k8s.namespace.name": "otel-demo"}


def cart_trace(i: int, trace_id: str | None = None) -> Trace:
    tid = trace_id or f"{0xA000 + i:032x}".replace("0", "1", 1)
    start = T0_US + i * 60 * SEC
    root = Span(
        tid,
        f"{i:04x}00000000000a",
        None,
        "frontend",
        "GET /api/cart",
        start,
        50_000,
        "server",
        tags={"http.method": "GET", "http.status_code": 200},
        process_tags=_pt("frontend"),
    )
    call = Span(
        tid,
        f"{i:04x}00000000000b",
        root.span_id,
        "frontend",
        "oteldemo.CartService/GetCart",
        start + 1_000,
        40_000,
        "client",
        tags={"rpc.system": "grpc"},
        process_tags=_pt("frontend"),
    )
    srv = Span(
        tid,
        f"{i:04x}00000000000c",
        call.span_id,
        "cart",
        "oteldemo.CartService/GetCart",
        start + 2_000,
        30_000,
        "server",
        tags={"rpc.grpc.status_code": 0},
        process_tags=_pt("cart"),
    )
    db = Span(
        tid,
        f"{i:04x}00000000000d",
        srv.span_id,
        "cart",
        "HGET",
        start + 3_000,
        2_000,
        "client",
        tags={"db.system": "redis", "net.peer.name": "valkey-cart"},
        process_tags=_pt("cart"),
    )
    return Trace(tid, [root, call, srv, db])


def checkout_trace(i: int) -> Trace:
    tid = f"{0xC000 + i:032x}".replace("0", "2", 1)
    start = T0_US + i * 60 * SEC + 30 * SEC
    root = Span(
        tid,
        f"{i:04x}10000000000a",
        None,
        "frontend",
        "POST /api/checkout",
        start,
        2_500_000,
        "server",
        error=True,
        tags={"http.method": "POST", "http.status_code": 500},
        process_tags=_pt("frontend"),
    )
    srv = Span(
        tid,
        f"{i:04x}10000000000b",
        root.span_id,
        "checkout",
        "oteldemo.CheckoutService/PlaceOrder",
        start + 5_000,
        2_400_000,
        "server",
        error=True,
        tags={"rpc.grpc.status_code": 4},
        logs=[(start + 2_400_000, {"event": "exception", "exception.message": "context deadline exceeded"})],
        process_tags=_pt("checkout"),
    )
    pay = Span(
        tid,
        f"{i:04x}10000000000c",
        srv.span_id,
        "payment",
        "oteldemo.PaymentService/Charge",
        start + 10_000,
        2_000_000,
        "server",
        error=True,
        tags={"app.payment.amount": 12.5},
        process_tags=_pt("payment"),
    )
    return Trace(tid, [root, srv, pay])


SHORT_ID_TRACE = "00000000000000000000000000000abc"


def build_traces() -> list[Trace]:
    traces = [cart_trace(i) for i in range(8)] + [checkout_trace(i) for i in range(4)]
    traces.append(cart_trace(9, trace_id=SHORT_ID_TRACE))
    return traces


@dataclass
class FixtureHost:
    """The parts of a twin the Jaeger handler uses."""

    traces: TraceSource | None
    masked: set[str] = field(default_factory=set)
    t: float = NOW_US / 1e6
    lock: threading.RLock = field(default_factory=threading.RLock)

    def now(self) -> float:
        return self.t

    def sync(self) -> None:
        pass
