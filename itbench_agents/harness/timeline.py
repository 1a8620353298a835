"""Twin time at a past wall moment of an episode, for MTTD in twin seconds.

Agents report *when* they reached their diagnosis in wall seconds since they started
(``AgentOutput.diagnosis_time_s``). The twin's virtual clock follows wall time but jumps forward
when the agent fast-forwards it (the ``wait`` tool), so the harness samples (wall, twin) pairs —
at the agent's start, at every trajectory event, at its end — and reads twin time between two
samples as the earlier sample plus the wall time since, never past the next sample.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field


@dataclass
class TwinTimeline:
    _walls: list[float] = field(default_factory=list)
    _twins: list[float] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def sample(self, wall: float, twin: float) -> None:
        """Record that the twin read ``twin`` at wall moment ``wall`` (samples arrive in order)."""
        with self._lock:
            if self._walls and wall < self._walls[-1]:
                return
            self._walls.append(wall)
            self._twins.append(max(twin, self._twins[-1]) if self._twins else twin)

    def twin_at(self, wall: float) -> float | None:
        """Twin time at wall moment ``wall`` (None before the first sample)."""
        with self._lock:
            i = bisect.bisect_right(self._walls, wall) - 1
            if i < 0:
                return None
            t = self._twins[i] + (wall - self._walls[i])
            if i + 1 < len(self._twins):
                t = min(t, self._twins[i + 1])
            return t
