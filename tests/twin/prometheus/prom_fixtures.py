"""A minimal twin-like object for the Prometheus-area tests (fixed series, manual clock, lock)."""

from __future__ import annotations

import threading
from typing import Any

from itbench_agents.twin.clock import ManualClock
from itbench_dev.prometheus.synthetic import Scenario, generate


class FakeTwin:
    def __init__(self, metrics: Any = None, now: float | None = None) -> None:
        self.sc = Scenario()
        self.metrics = metrics if metrics is not None else generate(self.sc)
        self.clock = ManualClock(now if now is not None else self.sc.start_s + self.sc.duration_s - 60)
        self.lock = threading.RLock()
        self.alerts: Any = None
        self.created_at = self.sc.start_s
        self.syncs = 0

    def now(self) -> float:
        return self.clock.now()

    def sync(self) -> None:
        self.syncs += 1
