"""Broken model settings are never scored as the agent's zero: a wrong key stops the run at
preflight; a 401/404 inside an episode makes it a harness error naming the model and status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.llm.testing_server import OpenAITestServer

ITBENCH = [sys.executable, "-m", "itbench_agents.cli"]
SCENARIO = "sre/payment-failure-flag-v1"


def _run(
    tmp_path: Path, url: str, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ITBENCH, "run", "--scenario", SCENARIO, "--agent", "sre-react", "--model", "openai/test",
         "--base-url", url, "--run-dir", str(tmp_path / "run"), "--no-report", *extra],
        capture_output=True, text=True, timeout=600, check=False, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.mark.slow
def test_wrong_key_stops_the_run_at_preflight(tmp_path: Path) -> None:
    with OpenAITestServer([], api_key="right") as srv:
        r = _run(tmp_path, srv.url, "--api-key-env", "MY_KEY", env={"MY_KEY": "wrong"})
    assert r.returncode == 2, r.stderr
    assert "refused the API key (HTTP 401" in r.stderr and "openai/test" in r.stderr
    assert not (tmp_path / "run" / "episodes.jsonl").exists()


@pytest.mark.slow
def test_auth_and_model_errors_inside_an_episode_are_harness_errors(tmp_path: Path) -> None:
    for status in (401, 404):
        with OpenAITestServer([], failures=[status]) as srv:
            r = _run(tmp_path / str(status), srv.url)
        assert r.returncode == 0, r.stderr
        (rec,) = read_episodes(tmp_path / str(status) / "run")
        assert rec.termination == "harness_error", rec
        assert rec.error and "model configuration error" in rec.error
        assert "openai/test" in rec.error and f"HTTP {status}" in rec.error
        assert rec.diagnosis is None and rec.mitigation is None  # unscored
