"""What the FinOps twin tests share: the real kubectl, and shell scripts run as command agents."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, RunConfig

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl binary not installed"),
]


def command_agent(tmp_path: Path, name: str, script: str) -> AgentSpec:
    """A command agent (no sandbox) that runs ``script`` with ``sh -e`` and reports nothing."""
    path = tmp_path / f"{name}.sh"
    path.write_text(f"set -e\n{script}\necho '{{}}' > \"$ITBENCH_WORKDIR/agent_output.json\"\n")
    return AgentSpec(name="command", label=name, command=["sh", str(path)], config={"sandbox": "none"})


def run_agents(run_dir: Path, scenario: str, agents: list[AgentSpec]) -> Path:
    """Every agent on ``scenario`` in one run folder, sharing one preparation (the week of past)."""
    _, specs, _ = start_run(run_dir, RunConfig(scenarios=[scenario], agents=agents), Catalogue.default())
    run_batch(run_dir, specs, share_prepared=True)
    return run_dir


def by_agent(records: list[EpisodeRecord]) -> dict[str, EpisodeRecord]:
    return {r.agent: r for r in records}
