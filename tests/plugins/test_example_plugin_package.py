"""The example plug-in package (examples/plugin/) installed into a fresh virtual environment: its
agent, its tool (through sre-react's ``--tools direct,+runbook``) and its scenario run through
``itbench run`` with nothing edited in itbench-agents (issue 27), and so do its persona with the
agent made for it and its backend (issue 30).

The fresh environment sees this checkout's environment through a ``.pth`` file (no network: the
dependencies cannot be downloaded again); the plug-in itself is built and installed into it by
``uv pip install``, as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.uv_offline import uv, uv_offline

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "examples" / "plugin"
SCENARIO = "sre/hotel-search-scaled-to-zero-v1"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin-venv")
    env_dir = root / "venv"
    subprocess.run([uv(), "venv", "-q", "--python", sys.executable, str(env_dir)], check=True, timeout=60)
    py = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(site, "_itbench_checkout.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    src = root / "plugin"
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    uv_offline("pip", "install", "--no-deps", "--python", str(py), str(src), timeout=120)
    return py


def itbench(py: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200", "ITBENCH_PLUGINS": "on"}
    env.pop("ITBENCH_SCENARIO_PATH", None)
    return subprocess.run(
        [str(py), "-m", "itbench_agents.cli", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env=env,
    )


def run_scenario(py: Path, run: Path, *agent_args: str) -> subprocess.CompletedProcess[str]:
    """``itbench run`` of the plug-in's scenario, the scripted model driving sre-react."""
    script = PLUGIN / "sre-react-runbook.yaml"
    args = ["run", "-s", SCENARIO, *agent_args, "--model", f"scripted:{script}", "--run-dir", str(run)]
    return itbench(py, *args, cwd=run.parent)


@pytest.mark.slow  # whole itbench runs in the plug-in's venv
def test_the_plugins_agent_tool_and_scenario_run_through_itbench_run(venv: Path, tmp_path: Path) -> None:
    agents = {
        r["name"]: r for r in json.loads(itbench(venv, "agents", "list", "--json", cwd=tmp_path).stdout)
    }
    assert agents["replica-restorer"]["source"] == "plug-in: itbench-example-plugin 0.1.0"
    assert agents["replica-restorer"]["available"] and agents["sre-react"]["source"] == "built-in"
    tools = {r["name"]: r for r in json.loads(itbench(venv, "tools", "list", "--json", cwd=tmp_path).stdout)}
    assert tools["runbook"]["source"] == "plug-in: itbench-example-plugin 0.1.0"
    listed = itbench(venv, "scenarios", "list", "--suite", "sre:example-plugin", "--json", cwd=tmp_path)
    assert [s["id"] for s in json.loads(listed.stdout)] == [SCENARIO]

    run = tmp_path / "run"
    res = run_scenario(
        venv, run, "--agent", "replica-restorer", "--agent", "sre-react", "--tools", "direct,+runbook"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        assert r["error"] is None, r["error"]
        assert r["diagnosis"]["correct"] and r["mitigation"]["passed"], (
            r["agent"],
            r["diagnosis"],
            r["mitigation"],
        )
    runbook_seen = 0
    for traj in run.glob("episodes/*__sre-react*/trajectory.jsonl"):
        for line in traj.read_text().splitlines():
            ev = json.loads(line)
            if ev.get("type") == "observation" and ev.get("tool") == "runbook":
                assert "scaled to zero" in str(ev.get("content")) and not ev.get("error")
                runbook_seen += 1
    assert runbook_seen == 1  # sre-react had the plug-in's tool because --tools asked for it


def test_the_plugins_persona_runs_through_itbench_run(venv: Path, tmp_path: Path) -> None:
    listed = itbench(venv, "scenarios", "list", "--suite", "log-triage", "--json", cwd=tmp_path)
    assert len(json.loads(listed.stdout)) == 2, listed.stderr
    run = tmp_path / "run"
    args = [
        "run",
        "--suite",
        "log-triage",
        "--agent",
        "error-grepper",
        "--agent",
        "noop",
        "--run-dir",
        str(run),
    ]
    res = itbench(venv, *args, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    found = {(r["scenario_id"], r["agent"]): r["scores"]["found"]["value"] for r in records}
    assert found == {
        ("log-triage/cart-redis-down-v1", "error-grepper"): 1.0,
        ("log-triage/payment-timeout-v1", "error-grepper"): 1.0,
        ("log-triage/cart-redis-down-v1", "noop"): 0.0,
        ("log-triage/payment-timeout-v1", "noop"): 0.0,
    }


@pytest.mark.slow  # whole itbench runs in the plug-in's venv
def test_the_plugins_backend_passes_the_kit_and_serves_a_run(venv: Path, tmp_path: Path) -> None:
    listed = {
        r["name"]: r for r in json.loads(itbench(venv, "backends", "list", "--json", cwd=tmp_path).stdout)
    }
    assert listed["small-twin"]["source"] == "plug-in: itbench-example-plugin 0.1.0"
    checked = itbench(venv, "backends", "check", "small-twin", cwd=tmp_path)
    assert checked.returncode == 0 and "backend small-twin on chain: PASS" in checked.stdout, checked.stdout
    run = tmp_path / "run"
    res = itbench(
        venv,
        "run",
        "-s",
        SCENARIO,
        "--agent",
        "replica-restorer",
        "--backend",
        "small-twin",
        "--run-dir",
        str(run),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    (record,) = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert record["mitigation"]["passed"], record


@pytest.mark.slow  # whole itbench runs in the plug-in's venv
def test_without_asking_for_it_sre_react_has_no_plugin_tool(venv: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = run_scenario(venv, run, "--agent", "sre-react")
    assert res.returncode == 0, res.stdout + res.stderr
    (traj,) = run.glob("episodes/*/trajectory.jsonl")
    errors = [json.loads(x).get("error") or "" for x in traj.read_text().splitlines()]
    assert any("unknown tool 'runbook'" in e for e in errors)
