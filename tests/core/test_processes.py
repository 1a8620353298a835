"""``processes.wait_for_exit``: a child's exit status, or None at the deadline, woken by the exit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from itbench_agents.processes import wait_for_exit


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.fixture(params=["pidfd", "polling"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pidfd" and not hasattr(os, "pidfd_open"):
        pytest.skip("this platform has no os.pidfd_open: only the polling fallback runs here")
    if request.param == "polling":
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    return str(request.param)


def test_the_exit_status_of_a_child_that_ends(mode: str) -> None:
    proc = _child("import sys; sys.exit(7)")
    assert wait_for_exit(proc, 60) == 7
    assert proc.returncode == 7  # reaped, as Popen.wait does


def test_none_at_the_deadline_and_the_child_still_runs(mode: str) -> None:
    proc = _child("import time; time.sleep(60)")
    try:
        assert wait_for_exit(proc, 0.2) is None
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert wait_for_exit(proc, 5) == proc.returncode  # an ended, reaped child: its status at once


def test_no_deadline_waits_for_the_end(mode: str) -> None:
    assert wait_for_exit(_child("pass"), None) == 0


def test_with_a_pidfd_it_never_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Popen.wait with a timeout sleeps up to 50 ms between looks; the pidfd path waits for the exit
    and only reaps the child afterwards (Popen.wait without a timeout)."""
    if not hasattr(os, "pidfd_open"):
        pytest.skip("this platform has no os.pidfd_open")
    timeouts: list[float | None] = []
    real_wait = subprocess.Popen.wait

    def spy(self: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        timeouts.append(timeout)
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", spy)
    assert wait_for_exit(_child("import time; time.sleep(0.3)"), 60) == 0
    assert timeouts == [None]
