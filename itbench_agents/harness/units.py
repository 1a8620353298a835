"""One unit of a batch's work — an episode, or episodes that share a preparation (``shared.py``) —
run so that it never raises for what an episode does, and the signals that stop a batch.

Interrupts: Ctrl-C (SIGINT) or SIGTERM raise :class:`Interrupted` (once); the unit in flight ends
where it is (its environment torn down by the exception's clean-up) and is not recorded. Every
executor (``executors.py``) runs units through :func:`safe_run_unit` (in this process) or
:func:`worker_unit` (in a worker process).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from .episode import EpisodeSpec, run_episode
from .records import EpisodeRecord
from .shared import crash_record, run_shared

STOP_GRACE_S = 10.0
"""How long interrupted worker processes get to tear their episodes down before they are killed."""


class Interrupted(BaseException):
    """Raised by the signal handlers of :func:`interrupt_on_signals` (a BaseException, like
    KeyboardInterrupt: no ``except Exception`` on the way may swallow it)."""


STOPPING = (KeyboardInterrupt, Interrupted)


@dataclass
class _Received:
    """The first stopping signal this process received since :func:`interrupt_on_signals`."""

    name: str | None = None


_RECEIVED = _Received()


def signalled() -> str | None:
    """The stopping signal this process received since :func:`interrupt_on_signals`, if any."""
    return _RECEIVED.name


def stop_if_signalled() -> None:
    """Raise :class:`Interrupted` when a signal arrived, even if code on the way (a library that
    catches ``BaseException``) turned its exception into something else: no record of an episode
    in flight when the signal came is kept."""
    if _RECEIVED.name is not None:
        raise Interrupted(_RECEIVED.name)


def _exit_now(signum: int, frame: FrameType | None) -> None:
    os._exit(128 + signum)


def _ignore(signum: int, frame: FrameType | None) -> None:
    """A further signal while the first one's clean-up runs. A Python handler rather than
    ``SIG_IGN``: a signal that arrived before the switch (Ctrl-C reaches a worker together with the
    SIGTERM the batch sends it) would otherwise be found ignored when Python handles it, and raise
    ``OSError: Signal 15 ignored due to race condition`` in the middle of that clean-up."""


SAME_INTERRUPT_S = 1.0
"""A second signal this soon after the first is the same interruption arriving twice, not a second
Ctrl-C: without a terminal, ``uv run`` passes a Ctrl-C on to its child, which the process group's
signal reached already (astral-sh/uv#13925), and a process manager may signal both the group and
the process."""


def interrupt_on_signals(second_exits: bool = False) -> Callable[[], None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread, once; a second signal is
    ignored (the clean-up the first one started runs on) or, with ``second_exits``, ends the
    process at once — unless it comes within :data:`SAME_INTERRUPT_S` of the first (then it is the
    same one, and ignored). Returns a function that puts the previous handlers back."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _RECEIVED.name = None

    def first(signum: int, frame: FrameType | None) -> None:
        first_at = time.monotonic()

        def again(signum: int, frame: FrameType | None) -> None:
            if time.monotonic() - first_at >= SAME_INTERRUPT_S:
                _exit_now(signum, frame)

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, again if second_exits else _ignore)
        _RECEIVED.name = signal.Signals(signum).name
        raise Interrupted(_RECEIVED.name)

    _RECEIVED.name = None

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, first)
    return restore


def unit_crash_record(spec: EpisodeSpec, exc: BaseException) -> EpisodeRecord:
    return crash_record(spec, f"worker crashed: {type(exc).__name__}: {exc}")


def safe_run(spec: EpisodeSpec) -> EpisodeRecord:
    try:
        return run_episode(spec)
    except STOPPING:
        raise  # not the episode's fault: the batch stops and does not record it
    except BaseException as e:  # noqa: BLE001 - run_episode should not raise; be sure anyway
        traceback.print_exc()
        return unit_crash_record(spec, e)


def safe_run_unit(unit: list[EpisodeSpec]) -> list[EpisodeRecord]:
    """Run one unit of work: a single episode, or episodes that share one preparation (``shared.py``)."""
    if len(unit) == 1:
        records = [safe_run(unit[0])]
    else:
        try:
            records = run_shared(unit)
        except STOPPING:
            raise
        except BaseException as e:  # noqa: BLE001 - run_shared should not raise; be sure anyway
            traceback.print_exc()
            records = [unit_crash_record(s, e) for s in unit]
    stop_if_signalled()
    return records


def worker_init() -> None:
    interrupt_on_signals()


def worker_unit(unit: list[EpisodeSpec]) -> list[EpisodeRecord]:
    """A worker process's unit: interrupted, it ends once the episode's clean-up has run (the
    pool would otherwise hand it the next unit)."""
    try:
        return safe_run_unit(unit)
    except STOPPING:
        sys.stderr.flush()
        os._exit(130)
