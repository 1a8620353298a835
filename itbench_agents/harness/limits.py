"""Limits the harness enforces on an episode (the exception that ends one early is ``core.agent.LimitExceeded``).

In-process agents are stopped cooperatively: the event sink raises :class:`LimitExceeded` on the
event that crosses a limit (max steps, tokens, cost), and the wall-time limit is enforced by the
episode runner (the agent's thread is abandoned, the environment torn down). Subprocess agents are
killed on timeout.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..core.agent import LimitExceeded
from ..core.output import Usage
from ..core.task import Limits


class LimitTracker:
    """Counts steps, tokens and cost from an agent's events; raises when a limit is crossed."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.usage = Usage()
        self.steps = 0
        self.started = time.perf_counter()
        self.tripped: LimitExceeded | None = None
        self._lock = threading.Lock()

    def observe(self, event: dict[str, Any]) -> None:
        with self._lock:
            kind = event.get("type")
            if kind == "model_call":
                self.usage.model_calls += 1
                self.usage.input_tokens += int(event.get("input_tokens") or 0)
                self.usage.output_tokens += int(event.get("output_tokens") or 0)
                self.usage.cost_usd += float(event.get("cost_usd") or 0.0)
            elif kind == "tool_call":
                self.usage.tool_calls += 1
                self.steps += 1
            self._check()

    def _check(self) -> None:
        if self.tripped is not None:
            raise self.tripped
        lim = self.limits
        exc = None
        if self.steps > lim.max_steps:
            exc = LimitExceeded("max_steps", f"more than {lim.max_steps} steps")
        elif (
            lim.max_tokens is not None and self.usage.input_tokens + self.usage.output_tokens > lim.max_tokens
        ):
            exc = LimitExceeded("cost_limit", f"more than {lim.max_tokens} tokens")
        elif lim.max_cost_usd is not None and self.usage.cost_usd > lim.max_cost_usd:
            exc = LimitExceeded("cost_limit", f"cost above ${lim.max_cost_usd}")
        elif time.perf_counter() - self.started > lim.wall_time_s:
            exc = LimitExceeded("timeout", f"wall time above {lim.wall_time_s} s")
        if exc is not None:
            self.tripped = exc
            raise exc
