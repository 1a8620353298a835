"""Fixed log streams (three services, ten minutes) and a stand-in twin for the Loki API tests."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from itbench_agents.twin.telemetry.sources import LogSource, LogStream

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
S = 1_000_000_000
NOW = T0 + 600  # ten minutes of logs behind "now"


def cart_line(i: int) -> str:
    """JSON logs of a .NET-ish service: every 5th request fails."""
    err = i % 5 == 0
    return json.dumps(
        {
            "level": "error" if err else "info",
            "status": 500 if err else 200,
            "msg": f"GetCart request {i}" + (" failed: connection refused" if err else ""),
            "duration": f"{(i % 7) * 100 + 5}ms",
            "http": {"method": "POST" if i % 2 else "GET", "route": "/api/cart"},
            "size": f"{i}KB",
        }
    )


def checkout_line(i: int) -> str:
    """logfmt logs of a Go service: every 10th call times out."""
    if i % 10 == 0:
        return f'level=error msg="failed to charge card: context deadline exceeded" latency={i * 10}ms svc=payment'
    return f"level=info msg=ok latency={i}ms svc=payment"


def build_streams() -> list[LogStream]:
    cart = LogStream(
        {"namespace": "otel-demo", "app": "cart", "pod": "cart-7d9f-abcde", "container": "cart"},
        [(T0 * S + i * 10 * S, cart_line(i)) for i in range(60)],
    )
    checkout = LogStream(
        {"namespace": "otel-demo", "app": "checkout", "pod": "checkout-5c4-xyz12", "container": "checkout"},
        [(T0 * S + i * 20 * S + 5 * S, checkout_line(i)) for i in range(30)],
    )
    nginx = LogStream(
        {"namespace": "ingress", "app": "proxy", "pod": "proxy-1", "container": "envoy"},
        [
            (
                T0 * S + i * 30 * S + 1,
                f'10.0.0.{i} - - [01/Jan/2026] "GET /api/products/{i} HTTP/1.1" {404 if i % 4 == 0 else 200} {100 + i}',
            )
            for i in range(20)
        ],
    )
    return [cart, checkout, nginx]


@dataclass
class FixtureHost:
    """The parts of a twin the Loki handler uses."""

    logs: LogSource | None
    t: float = float(NOW)
    lock: threading.RLock = field(default_factory=threading.RLock)
    syncs: int = 0

    def now(self) -> float:
        return self.t

    def sync(self) -> None:
        self.syncs += 1
