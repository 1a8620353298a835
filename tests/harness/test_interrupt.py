"""Stopping a run as users do (issue 27): Ctrl-C or SIGTERM on a real ``itbench run``.

The first signal stops the batch within seconds at any concurrency, records none of the episodes
in flight (not as the agent's error, not as the harness's), says how to resume and exits 130; the
resumed run runs exactly what is left, and nothing of the first run is left running.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

SCENARIOS = [
    "sre/ad-scaled-to-zero-v1",
    "sre/cart-failure-flag-v1",
    "sre/payment-failure-flag-v1",
    "sre/frontend-http-delay-v1",
]
ITBENCH = [sys.executable, "-m", "itbench_agents.cli"]


def _start(
    run_dir: Path, concurrency: int, executor: list[str], env: dict[str, str]
) -> subprocess.Popen[str]:
    args = [x for sid in SCENARIOS for x in ("--scenario", sid)]
    return subprocess.Popen(
        [*ITBENCH, "run", *args, "--agent", "noop", "--concurrency", str(concurrency), *executor]
        + ["--no-report", "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        env=env,
    )


def _mentioning(path: str) -> list[str]:
    """Processes whose command line names ``path`` (a local Ray's: their session folder is in it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and path in cmdline:
            found.append(f"{proc.name}: {cmdline[:200]}")
    return found


def _none_left(path: str, within_s: float) -> list[str]:
    deadline = time.monotonic() + within_s
    while (left := _mentioning(path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _records(run_dir: Path) -> list[dict[str, object]]:
    path = run_dir / "episodes.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _group_gone(pgid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _wait_started(run_dir: Path, proc: subprocess.Popen[str], within_s: float = 120) -> None:
    """Until an episode folder exists: the batch is running episodes."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if (run_dir / "episodes").exists() and any((run_dir / "episodes").iterdir()):
            return
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        time.sleep(0.1)
    raise AssertionError("no episode started")


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("concurrency", "how", "executor"),
    [(2, "ctrl-c", []), (1, "sigterm", []), (2, "ctrl-c", ["--executor", "ray"])],
    ids=["2-ctrl-c", "1-sigterm", "ray-ctrl-c"],
)
def test_a_signal_stops_the_run_and_the_same_run_resumes(
    tmp_path: Path, concurrency: int, how: str, executor: list[str]
) -> None:
    run_dir = tmp_path / "run"
    # a local Ray's processes are in their own process groups: they are found by their folder
    ray_tmp = tempfile.mkdtemp(prefix="itb-ray-")  # short: Ray's socket paths live under it
    env = {**os.environ, "RAY_TMPDIR": ray_tmp}
    proc = _start(run_dir, concurrency, executor, env)
    _wait_started(run_dir, proc)
    time.sleep(0.5)
    t0 = time.monotonic()
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends the foreground job
    else:
        proc.send_signal(signal.SIGTERM)  # the process alone (a scheduler, `kill`)
    out, _ = proc.communicate(timeout=60)
    stopped_s = time.monotonic() - t0
    assert proc.returncode == 130, out[-3000:]
    assert stopped_s < 30, stopped_s
    assert f"Resume with: itbench run --resume {run_dir}" in out, out[-3000:]
    assert _group_gone(proc.pid, 20), "processes of the interrupted run are still there"
    assert not _none_left(ray_tmp, 20), "the interrupted run's Ray is still there"
    first = _records(run_dir)
    assert len(first) < len(SCENARIOS), "the run was not interrupted: make the episodes longer"
    for rec in first:  # what was recorded finished on its own
        assert rec["termination"] == "submitted", rec

    again = subprocess.run(
        [
            *ITBENCH,
            "run",
            "--resume",
            str(run_dir),
            "--concurrency",
            str(concurrency),
            *executor,
            "--no-report",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"done: {len(SCENARIOS) - len(first)} ran, {len(first)} already done" in again.stderr
    recs = _records(run_dir)
    assert sorted(r["scenario_id"] for r in recs) == sorted(SCENARIOS)
    assert all(r["termination"] == "submitted" for r in recs)
    assert not _none_left(ray_tmp, 20)
    shutil.rmtree(ray_tmp, ignore_errors=True)
