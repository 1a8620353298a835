"""How far a non-admin caller may fast-forward the twin's clock (``POST /itbench/v1/advance``).

Twin seconds an agent advances are time it did not spend: they count against the same wall-time
budget as the seconds it really ran. The harness installs an :class:`AdvanceBudget` on the twin
while the agent runs; the API refuses an advance that would take the agent past its limit.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AdvanceBudget:
    limit_s: float
    """The agent's wall-time limit (seconds): wall seconds used + twin seconds advanced ≤ this."""
    started: float = field(default_factory=time.monotonic)
    advanced_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def used_wall_s(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        return self.limit_s - self.used_wall_s() - self.advanced_s

    def take(self, seconds: float) -> str | None:
        """Book ``seconds`` of advance; None when granted, else why it is refused."""
        with self._lock:
            left = self.remaining_s()
            if seconds > left:
                return (
                    f"advance of {seconds:g} s refused: only {max(0.0, left):.0f} s of this episode's "
                    f"{self.limit_s:g} s time budget remain (wall time used {self.used_wall_s():.0f} s, "
                    f"twin time advanced {self.advanced_s:g} s)"
                )
            self.advanced_s += seconds
            return None


def start_agent_turn(twin: Any, limit_s: float) -> None:
    """The agent's turn begins: its advances count against ``limit_s`` and the twin follows wall time."""
    twin.advance_budget = AdvanceBudget(limit_s=limit_s)
    twin.clock.resume()


def advanced_by_agent(twin: Any) -> float:
    """Twin seconds the agent fast-forwarded through the API since its turn began."""
    budget = getattr(twin, "advance_budget", None) if twin is not None else None
    return float(budget.advanced_s) if budget is not None else 0.0


def end_agent_turn(twin: Any) -> None:
    """The agent's turn ends: no more advances, and the clock moves only when the harness moves it."""
    twin.advance_budget = None
    twin.clock.pause()
