"""The `agents`, `mcp` and `ray` extras are optional: without them the twin, the harness, the scorers and the
non-LLM agents run, and what needs an extra says which one to install (itbench_agents/extras.py).

"Without them" is a Python whose import system refuses the extras' modules (a ``sitecustomize``
on PYTHONPATH), the same as an install without the extras; the static side is import-linter's
"only the LLM agents and the model layer need the optional extras" contract (pyproject.toml).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from itbench_agents.extras import EXTRAS, MissingExtraError, missing_modules, require_extra

ROOT = Path(__file__).resolve().parents[2]
ITBENCH = [sys.executable, "-m", "itbench_agents.cli"]

BLOCKER = """
import importlib.abc
import sys

BLOCKED = {blocked!r}


class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def _without_extras(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python cannot import any extra's module."""
    site = tmp_path / "site"
    site.mkdir()
    blocked = sorted({m for mods in EXTRAS.values() for m in mods})
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=blocked))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "250"
    return env


def _itbench(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ITBENCH, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def _run_one(env: dict[str, str], run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``itbench run`` of one hotel scenario with ``args`` (agent, executor) into ``run_dir``."""
    return _itbench(env, "run", "-s", "sre/hotel-geo-scaled-to-zero-v1", *args, "--run-dir", str(run_dir))


def test_extras_table_matches_pyproject() -> None:
    """EXTRAS names the modules of exactly the distributions pyproject.toml's extras list."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = {d.split(">")[0].split("=")[0].split("[")[0].strip() for d in declared[extra]}
        assert {m.replace("_", "-") for m in modules} == names, extra
    runtime = {d.split(">")[0].split("=")[0].split("[")[0].strip() for d in project["dependencies"]}
    assert not runtime & {m.replace("_", "-") for mods in EXTRAS.values() for m in mods}


def test_require_extra_names_what_to_install() -> None:
    assert missing_modules("agents") == []  # the dev environment has every extra
    require_extra("mcp", "x")
    with pytest.raises(KeyError, match="unknown extra"):
        missing_modules("gpu")
    err = MissingExtraError("agents", "agent 'sre-react'", ["langgraph"])
    assert "pip install 'itbench-agents[agents]'" in str(err) and "langgraph" in str(err)


def test_without_extras_what_needs_one_says_which(tmp_path: Path) -> None:
    env = _without_extras(tmp_path)
    help_ = _itbench(env, "--help")
    assert help_.returncode == 0, help_.stderr

    listed = _itbench(env, "agents", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    for name in ("sre-react", "ciso-react", "finops-react"):
        assert rows[name]["available"] is False and rows[name]["extra"] == "agents"
    for name in ("noop", "oracle", "sre-heuristic", "ciso-catalogue", "finops-heuristic"):
        assert rows[name]["available"] is True, name

    run = _run_one(env, tmp_path / "run", "--agent", "sre-react", "--model", "scripted")
    assert run.returncode == 2
    assert "itbench-agents[agents]" in run.stderr and "Traceback" not in run.stderr + run.stdout

    endpoints = tmp_path / "endpoints.json"
    endpoints.write_text(json.dumps({"kubeconfig": "", "kube_url": ""}))
    mcp = _itbench(env, "mcp", "serve", "--endpoints", str(endpoints))
    assert mcp.returncode == 2
    assert "itbench-agents[mcp]" in mcp.stderr and "Traceback" not in mcp.stderr

    serve = _itbench(env, "llm", "serve-script", str(ROOT / "pyproject.toml"))
    assert serve.returncode == 2 and "itbench-agents[agents]" in serve.stderr

    executors = {r["name"]: r for r in json.loads(_itbench(env, "executors", "list", "--json").stdout)}
    assert not executors["ray"]["available"] and "itbench-agents[ray]" in executors["ray"]["error"]
    assert executors["processes"]["available"]
    on_ray = _run_one(env, tmp_path / "ray-run", "--agent", "noop", "--executor", "ray")
    assert on_ray.returncode == 2
    assert "itbench-agents[ray]" in on_ray.stderr and "Traceback" not in on_ray.stderr + on_ray.stdout


@pytest.mark.slow
def test_without_extras_an_episode_runs_and_is_scored(tmp_path: Path) -> None:
    env = _without_extras(tmp_path)
    run = _itbench(
        env, "run", "-s", "sre/hotel-geo-scaled-to-zero-v1", "--agent", "oracle", "--agent", "noop",
        "--run-dir", str(tmp_path / "run"),
        timeout=240,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout + run.stderr
    assert "oracle: diagnosis 1/1, mitigation 1/1" in out and "noop: diagnosis 0/1, mitigation 0/1" in out
