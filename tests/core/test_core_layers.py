"""The package's layers hold: import-linter's contracts (``[tool.importlinter]`` in pyproject.toml)
are kept by the tree, and they do catch an import that runs up a layer (issue 30, step 1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(cwd: Path, config: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(LINT), "--config", str(config), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_tree_keeps_every_layer_contract() -> None:
    r = _lint(ROOT, ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    names = [
        c["name"]
        for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    ]
    assert len(names) >= 3
    for name in names:
        assert f"{name} KEPT" in r.stdout, (name, r.stdout[-2000:])


def test_the_contracts_catch_core_importing_the_twin(tmp_path: Path) -> None:
    """The same contracts over a copy of the package in which core imports the twin: broken."""
    pkg = tmp_path / "itbench_agents"
    shutil.copytree(
        ROOT / "itbench_agents", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.md", "_data")
    )
    task = pkg / "core" / "task.py"
    task.write_text(task.read_text() + "\nfrom ..twin.clock import VirtualClock  # noqa\n")
    config = tmp_path / "pyproject.toml"
    config.write_text((ROOT / "pyproject.toml").read_text())
    r = _lint(tmp_path, config, pythonpath=tmp_path)
    assert r.returncode != 0, r.stdout[-2000:]
    assert "core and k8s are the bottom: they import nothing else of the package BROKEN" in r.stdout
    assert "itbench_agents.core.task -> itbench_agents.twin.clock" in r.stdout
