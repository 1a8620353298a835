"""benchmarks/local_llm.py, run as a user would against an OpenAI-compatible server — here the
project's test server playing a recorded conversation, its tool calls written as text (as small
local models behind a server without a tool-call parser write them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from itbench_agents.llm.scripted import load_script
from itbench_agents.llm.testing_server import OpenAITestServer

REPO = Path(__file__).resolve().parents[2]


def as_text(turn: dict) -> dict:
    """The turn with its tool calls moved into the text, as a ``<tool_call>`` block each."""
    calls = turn.get("tool_calls") or []
    if not calls:
        return turn
    blocks = "".join(
        f'\n<tool_call>\n{{"name": "{c["name"]}", "arguments": {json.dumps(c["args"])}}}\n</tool_call>'
        for c in calls
    )
    return {"content": (turn.get("content") or "") + blocks}


@pytest.mark.slow
def test_the_local_model_benchmark_prints_its_figures(tmp_path: Path) -> None:
    turns = yaml.safe_load((REPO / "examples/llm/ad-scaled-to-zero.yaml").read_text())
    script = tmp_path / "text-calls.yaml"
    script.write_text(yaml.safe_dump([as_text(t) for t in turns]))
    with OpenAITestServer(load_script(script), repeat=True) as srv:
        r = subprocess.run(
            [sys.executable, str(REPO / "benchmarks/local_llm.py"), "--base-url", srv.url, "--model", "local",
             "-s", "sre/ad-scaled-to-zero-v1", "--text-tool-calls", "--run-dir", str(tmp_path / "run")],
            capture_output=True, text=True, timeout=300, cwd=REPO,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    assert "diagnosis   1/1" in out and "mitigation  1/1" in out, out
    assert "output tokens/s" in out and "time per episode: median" in out
    n = int(out.split("tool calls read from text: ")[1].split(";")[0])
    assert n == sum(len(t.get("tool_calls") or []) for t in turns) > 0


def test_an_unreachable_server_is_one_clear_error(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/local_llm.py"), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    assert r.returncode == 2 and "cannot connect to 127.0.0.1:9" in r.stderr
