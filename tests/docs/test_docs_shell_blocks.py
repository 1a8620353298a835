"""The docs' shell blocks that are not ``itbench`` alone run as written (issue 27: "every shell
example in the docs runs in CI"): the README's "explore the twin by hand" block (kubectl and curl
against ``itbench twin serve``) and docs/extending.md's command-agent block. The other shell blocks
run in the tests they name: tests/docs/test_docs_commands.py (own scenario folder),
tests/llm/test_serve_script.py (serve-script), tests/plugins (``uv pip install ./examples/plugin``),
tests/harness/test_readme_main_job.py (the README's main job)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^([ \t]*)```(\w*)\n(.*?)^\1```", re.M | re.S)
ITBENCH = f"{sys.executable} -m itbench_agents.cli"


def bash_block(doc: str, containing: str) -> str:
    text = (REPO / doc).read_text()
    (block,) = [b for _, lang, b in FENCE.findall(text) if lang == "bash" and containing in b]
    return block


def as_here(script: str) -> str:
    """The block with ``itbench`` as this checkout's CLI (``uv run`` would re-sync a venv)."""
    return re.sub(r"(?m)^(uv run )?itbench ", f"{ITBENCH} ", script)


def run_bash(script: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("kubectl") and shutil.which("jq")), reason="needs kubectl and jq")
def test_readme_explore_the_twin_block_runs(tmp_path: Path) -> None:
    block = bash_block("README.md", "twin serve --app otel-demo").replace("/tmp/twin.", f"{tmp_path}/twin.")
    serve, *rest = [line for line in block.splitlines() if line.strip()]
    assert "itbench twin serve" in serve and rest, block
    commands = [line for line in rest if not line.startswith("#")]
    # "in another shell": the serve line in the background, the rest once its endpoints are written
    script = "\n".join(
        [
            as_here(serve) + " > serve.log 2>&1 &",
            "trap 'kill %1; wait' EXIT",
            f"for _ in $(seq 600); do [ -s {tmp_path}/twin.json ] && break; sleep 0.1; done",
            *(f"echo '$ {c.split('--kubeconfig')[-1].strip()[:60]}'\n{c}" for c in commands),
        ]
    )
    res = run_bash(script, tmp_path, timeout=240)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:] + (tmp_path / "serve.log").read_text()[-2000:]
    assert re.search(r"(?m)^otel-demo\s+checkout-\S+\s+1/1\s+Running", out), out[:3000]
    assert "Name:" in out and "checkout" in out  # describe
    assert "deployment.apps/ad image updated" in out and "deployment.apps/ad rolled back" in out
    assert '"status":"success"' in out.replace(" ", "")  # the alerts API's answer


@pytest.mark.slow
def test_extending_command_agent_block_runs(tmp_path: Path) -> None:
    res = run_bash(as_here(bash_block("docs/extending.md", "my_agent.sh <<")), tmp_path, timeout=240)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert re.search(r"done: 1 ran, 0 already done; diagnosis \d/1", out), out[-3000:]
    (traj,) = (tmp_path / "runs").rglob("trajectory.jsonl")
    assert "otel-demo/Deployment/cart" in traj.read_text()  # the script's answer reached the record
