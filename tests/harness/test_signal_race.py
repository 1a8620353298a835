"""Ctrl-C reaches a batch's worker together with the SIGTERM the batch sends it (the terminal
signals the whole process group; the batch stops its pool). Both arrive before Python runs the
first handler: the second must not surface as ``OSError: Signal 15 ignored due to race condition``
in the middle of the clean-up the first one started (it did, once the first handler switched the
signals to ``SIG_IGN``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from itbench_agents.harness.units import Interrupted, interrupt_on_signals

    interrupt_on_signals()
    both = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, both)
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGTERM)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, both)  # both delivered at once
        for _ in range(1000):
            pass
        sys.exit("the first signal raised nothing")
    except Interrupted as e:
        first = str(e)
    total = 0
    for i in range(100_000):  # the clean-up the first signal started, with the second pending
        total += i
    print("clean-up ran after", first, flush=True)
    """
)


def test_a_second_signal_pending_with_the_first_does_not_break_the_clean_up() -> None:
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert "race condition" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "clean-up ran after SIGINT"


SECOND_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    from itbench_agents.harness.units import SAME_INTERRUPT_S, Interrupted, interrupt_on_signals

    interrupt_on_signals(second_exits=True)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        sys.exit("the first signal raised nothing")
    except Interrupted:
        pass
    os.kill(os.getpid(), signal.SIGINT)  # the same Ctrl-C again (uv run without a terminal)
    time.sleep(0.05)
    print("clean-up runs on", flush=True)
    time.sleep(SAME_INTERRUPT_S)
    os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C
    time.sleep(5)
    print("still here", flush=True)
    """
)


def test_the_same_interrupt_twice_is_one_and_a_second_one_later_exits_at_once() -> None:
    """``itbench run``'s handlers (second_exits): a signal right after the first is the same
    interruption delivered twice and lets the clean-up run; a later one ends the process (130)."""
    r = subprocess.run([sys.executable, "-c", SECOND_SCRIPT], capture_output=True, text=True, timeout=60)
    assert r.stdout == "clean-up runs on\n", (r.stdout, r.stderr)
    assert r.returncode == 130, r.stderr
