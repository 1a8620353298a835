"""``itbench llm serve-script``: the shipped example script, served over the OpenAI protocol, drives
sre-react through run after run without a restart (issue 27: the test server was only in a module
docstring, had no example script and had to be restarted between runs)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ITBENCH = [sys.executable, "-m", "itbench_agents.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_example_script_served_drives_two_episodes_in_a_row(tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [
            *ITBENCH,
            "llm",
            "serve-script",
            str(REPO / "examples/llm/ad-scaled-to-zero.yaml"),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.communicate()[0]
                time.sleep(0.2)
        run = subprocess.run(
            [
                *ITBENCH,
                "run",
                "-s",
                "sre/ad-scaled-to-zero-v1",
                "--agent",
                "sre-react",
                "--model",
                "openai/test",
            ]
            + ["--base-url", f"http://127.0.0.1:{port}/v1", "--trials", "2", "--no-report"]
            + ["--run-dir", str(tmp_path / "run")],
            capture_output=True,
            text=True,
            timeout=500,
            check=False,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert "diagnosis 2/2, mitigation 2/2, errors 0" in run.stderr, run.stderr[-3000:]
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=30)
    assert server.returncode == 0 and "Traceback" not in out, out
