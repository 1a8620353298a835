"""Virtual clocks for the twin.

The twin never reads wall time directly: everything asks a :class:`Clock`.

- :class:`VirtualClock` follows wall time plus an offset; the harness fast-forwards it with
  :meth:`VirtualClock.advance` (the offset grows, the clock keeps ticking with wall time).
  ``Twin.for_app`` starts it :data:`DEFAULT_LEAD_S` behind the wall clock once the history has
  run, so that fast-forwards eat into that lead instead of putting the twin in the future: real
  ``kubectl`` computes some ages client-side from the local clock (``describe``'s event ages, the
  "Started"/"Finished" of containers), and a timestamp ahead of it prints ``<invalid>``.
  The harness pauses it outside the agent's turn (``TwinEnvironment``), so that deploy, injection,
  the alert wait and the settle run the same on a fast and a slow machine.
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
fast-forwards before an agent starts in an SRE episode (their alert windows are 900 s), so the
twin's "now" is not ahead of the agent's wall clock when the agent starts. The price: until
fast-forwards use it up, ages a client computes from its own clock are up to this much older than
the server's. A FinOps episode waits up to an hour for its cost alert and starts on a whole hour
(``harness_clock``): when the agent starts, its twin is anywhere from its alert wait less 15
minutes ahead of the wall clock to an hour behind that (the runaway CronJob, whose alert wait is
37 min: from 22 min ahead to 38 min behind, by the minute of the hour the episode starts)."""


class VirtualClock(_ClockBase):
    """Wall time plus an offset that only grows; it can be paused (it then moves only when
    advanced) and resumed (it goes on with wall time from where it stood)."""

    def __init__(self, offset: float = 0.0, wall: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._offset = float(offset)
        self._wall = wall
        self._frozen: float | None = None

    @classmethod
    def paused_at(cls, start: float, wall: Callable[[], float] = time.time) -> VirtualClock:
        """A paused clock reading ``start``."""
        clock = cls(offset=start - wall(), wall=wall)
        clock._frozen = float(start)
        return clock

    @property
    def offset(self) -> float:
        return self._offset

    @property
    def paused(self) -> bool:
        return self._frozen is not None

    def pause(self) -> None:
        """Stop following wall time: from now on only :meth:`advance` moves the clock."""
        with self._lock:
            if self._frozen is None:
                self._frozen = self._wall() + self._offset

    def resume(self) -> None:
        """Follow wall time again, from the time the clock reads now."""
        with self._lock:
            if self._frozen is not None:
                self._offset = self._frozen - self._wall()
                self._frozen = None

    def now(self) -> float:
        frozen = self._frozen
        return frozen if frozen is not None else self._wall() + self._offset

    def lag(self) -> float:
        """Seconds the virtual clock is behind the wall clock (negative: ahead of it)."""
        return self._wall() - self.now()

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"cannot move the clock backwards ({seconds} s)")
        with self._lock:
            self._offset += seconds
            if self._frozen is not None:
                self._frozen += seconds
        new = self.now()
        self._notify(new)
        return new


def scaled_wall(speed: float, wall: Callable[[], float] = time.time) -> Callable[[], float]:
    """A wall clock that runs ``speed`` times as fast as ``wall`` from the moment it is made: a
    :class:`VirtualClock` over it is a cluster whose time passes faster than the harness's (``itbench
    twin serve --speed``, a twin served as a live cluster in tests). Clients that compute ages from
    their own clock see the cluster's times drift into their future."""
    if not speed > 0:
        raise ValueError(f"speed must be positive, not {speed!r}")
    if speed == 1:
        return wall
    start = wall()
    return lambda: start + (wall() - start) * speed


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
