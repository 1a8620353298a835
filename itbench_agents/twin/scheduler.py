"""Discrete-event scheduler: the twin's notion of "things happen at virtual times".

Controllers never sleep. They schedule callbacks at exact virtual times (``at``/``after``) or
as soon as possible (``soon``). :meth:`Scheduler.run_until` runs everything due, in time order,
with :meth:`Scheduler.now` pinned to each callback's own time, so a container that crashes
"10 s after start" gets exactly that timestamp no matter when the twin is next looked at.
That lazy catch-up is what makes the twin deterministic: same inputs at the same virtual times
give the same state, however wall time went by.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from .clock import Clock


class SchedulerOverload(RuntimeError):
    """Raised when callbacks keep rescheduling each other without time moving on."""


@dataclass(slots=True)
class _Item:
    when: float
    seq: int
    fn: Callable[[], None]
    key: Hashable | None = None
    cancelled: bool = False


_Entry = tuple[float, int, _Item]
"""A heap entry: ``(when, seq, item)``, ordered by time, then by when it was scheduled (``seq`` is
unique, so the item itself is never compared: tuples compare in C, a dataclass's ``__lt__`` in
Python, and a week of history is a million comparisons)."""


class Scheduler:
    """A heap of timed callbacks over a :class:`Clock`."""

    MAX_STEPS_PER_RUN = 200_000

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._keyed: dict[Hashable, _Item] = {}
        self._pinned: float | None = None
        self._last = clock.now()
        self._target: float | None = None

    def now(self) -> float:
        """The current virtual time; while a callback runs, that callback's time."""
        if self._pinned is not None:
            return self._pinned
        return max(self.clock.now(), self._last)

    def at(self, when: float, fn: Callable[[], None], key: Hashable | None = None) -> None:
        """Run ``fn`` at virtual time ``when``. A ``key`` replaces an earlier item with the same key."""
        if key is not None:
            self.cancel(key)
        item = _Item(max(when, self._pinned or when), next(self._seq), fn, key)
        if key is not None:
            self._keyed[key] = item
        heapq.heappush(self._heap, (item.when, item.seq, item))

    def after(self, delay: float, fn: Callable[[], None], key: Hashable | None = None) -> None:
        self.at(self.now() + max(0.0, delay), fn, key)

    def soon(self, fn: Callable[[], None], key: Hashable | None = None) -> None:
        """Run ``fn`` at the current time, after what is already due (a work queue)."""
        if key is not None and key in self._keyed and not self._keyed[key].cancelled:
            existing = self._keyed[key]
            if existing.when <= self.now():
                return  # already queued for now
        self.at(self.now(), fn, key)

    def cancel(self, key: Hashable) -> None:
        item = self._keyed.pop(key, None)
        if item is not None:
            item.cancelled = True

    def pending(self) -> int:
        return sum(1 for _, _, i in self._heap if not i.cancelled)

    def next_time(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def horizon(self) -> float | None:
        """While :meth:`run_until` runs: the time it runs to (nothing outside the scheduler's
        callbacks touches the twin before then); None otherwise."""
        return self._target

    def run_until(self, t: float | None = None) -> int:
        """Run every callback due at or before ``t`` (default: the clock's now). Returns the count."""
        target = self.clock.now() if t is None else t
        outer, self._target = self._target, target
        try:
            return self._run_until(target)
        finally:
            self._target = outer

    def _run_until(self, target: float) -> int:
        steps = 0
        while True:
            nxt = self.next_time()
            if nxt is None or nxt > target:
                break
            item = heapq.heappop(self._heap)[2]
            if item.key is not None and self._keyed.get(item.key) is item:
                del self._keyed[item.key]
            steps += 1
            if steps > self.MAX_STEPS_PER_RUN:
                raise SchedulerOverload(
                    f"more than {self.MAX_STEPS_PER_RUN} callbacks without reaching t={target}"
                )
            self._pinned = max(item.when, self._last)
            try:
                item.fn()
            finally:
                self._last = self._pinned
                self._pinned = None
        self._last = max(self._last, target)
        return steps
