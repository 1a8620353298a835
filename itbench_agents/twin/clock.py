"""Virtual clocks for the twin.

The twin never reads wall time directly: everything asks a :class:`Clock`.

- :class:`VirtualClock` follows wall time plus an offset; the harness fast-forwards it with
  :meth:`VirtualClock.advance` (the offset grows, the clock keeps ticking with wall time).
  ``Twin.for_app`` starts it :data:`DEFAULT_LEAD_S` behind the wall clock once the history has
  run, so that fast-forwards eat into that lead instead of putting the twin in the future: real
  ``kubectl`` computes some ages client-side from the local clock (``describe``'s event ages, the
  "Started"/"Finished" of containers), and a timestamp ahead of it prints ``<invalid>``.
- :class:`ManualClock` only moves when told to; tests use it for exact, repeatable timings.

Times are Unix seconds as floats.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Anything that tells the twin what time it is."""

    def now(self) -> float:
        """Current virtual time in Unix seconds."""
        ...

    def advance(self, seconds: float) -> float:
        """Move virtual time forward by ``seconds`` (>= 0); returns the new time."""
        ...


class _ClockBase:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Callable[[float], None]] = []

    def on_advance(self, listener: Callable[[float], None]) -> None:
        """Call ``listener(new_now)`` after every explicit :meth:`advance`."""
        self._listeners.append(listener)

    def _notify(self, now: float) -> None:
        for listener in list(self._listeners):
            listener(now)


DEFAULT_LEAD_S = 900.0
"""How far behind the wall clock a twin starts (after its history): the longest the harness
fast-forwards before an agent starts (every scenario's alert window is 900 s), so the twin's "now"
is never ahead of the agent's wall clock when the agent starts. The price: until fast-forwards use
it up, ages a client computes from its own clock are up to this much older than the server's."""


class VirtualClock(_ClockBase):
    """Wall time plus an offset that only grows."""

    def __init__(self, offset: float = 0.0, wall: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._offset = float(offset)
        self._wall = wall

    @property
    def offset(self) -> float:
        return self._offset

    def now(self) -> float:
        return self._wall() + self._offset

    def lag(self) -> float:
        """Seconds the virtual clock is behind the wall clock (negative: ahead of it)."""
        return -self._offset

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"cannot move the clock backwards ({seconds} s)")
        with self._lock:
            self._offset += seconds
        new = self.now()
        self._notify(new)
        return new


class ManualClock(_ClockBase):
    """A clock that stands still until :meth:`advance` or :meth:`set` moves it."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        super().__init__()
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"cannot move the clock backwards ({seconds} s)")
        with self._lock:
            self._now += seconds
        self._notify(self._now)
        return self._now

    def set(self, when: float) -> float:
        if when < self._now:
            raise ValueError("cannot move the clock backwards")
        return self.advance(when - self._now)
