"""``--sandbox``: ``auto`` says loudly when it runs without a sandbox (run output and trajectory),
``require`` (or ``bwrap``) refuses to run without one, ``none`` runs without one on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from itbench_agents import sandbox
from itbench_agents.agents.command import CommandAgent
from itbench_agents.cli import app
from itbench_agents.commands.run import _sandbox_warning
from itbench_agents.core.endpoints import Endpoints
from itbench_agents.core.events import WarningEvent, to_event
from itbench_agents.core.task import Limits, Task
from itbench_agents.harness.records import AgentSpec, RunConfig


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine as one where bubblewrap is missing or cannot create namespaces."""
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)


def _task(work: Path) -> Task:
    ep = Endpoints(kubeconfig=str(work / "kubeconfig"), kube_url="https://127.0.0.1:1")
    return Task(goal="g", endpoints=ep, workdir=str(work), limits=Limits(wall_time_s=30), namespaces=["ns"])


def test_auto_without_bubblewrap_warns_in_the_trajectory(tmp_path: Path, no_bwrap: None) -> None:
    events: list[dict] = []
    out = CommandAgent(["true"], sandbox="auto").run(_task(tmp_path), events.append)
    assert out.extra["sandbox"] == "none"
    warnings = [to_event(e) for e in events if e.get("type") == "warning"]
    assert len(warnings) == 1 and isinstance(warnings[0], WarningEvent)
    assert warnings[0].where == "sandbox" and "WITHOUT a sandbox" in warnings[0].message


def test_none_chosen_on_purpose_is_not_a_warning(tmp_path: Path, no_bwrap: None) -> None:
    events: list[dict] = []
    CommandAgent(["true"], sandbox="none").run(_task(tmp_path), events.append)
    assert not [e for e in events if e.get("type") == "warning"]


@pytest.mark.parametrize("mode", ["require", "bwrap"])
def test_require_refuses_to_run_without_a_sandbox(tmp_path: Path, no_bwrap: None, mode: str) -> None:
    with pytest.raises(sandbox.SandboxUnavailable, match=f"--sandbox {mode}"):
        CommandAgent(["true"], sandbox=mode).run(_task(tmp_path), lambda e: None)  # type: ignore[arg-type]
    r = CliRunner().invoke(
        app,
        ["run", "--scenario", "sre/ad-scaled-to-zero-v1", "--agent", "command", "--command", "true",
         "--sandbox", mode, "--run-dir", str(tmp_path / "r")],
    )  # fmt: skip
    assert r.exit_code == 2 and "bubblewrap is not installed or cannot create namespaces" in r.output
    assert not (tmp_path / "r").exists()


def test_the_run_warns_only_for_command_agents_on_auto(no_bwrap: None) -> None:
    def config(*agents: AgentSpec) -> RunConfig:
        return RunConfig(scenarios=["sre/ad-scaled-to-zero-v1"], agents=list(agents))

    warning = _sandbox_warning(
        config(AgentSpec(name="command", command=["true"], config={"sandbox": "auto"}))
    )
    assert warning and "WITHOUT a sandbox" in warning and "--sandbox require" in warning
    assert (
        _sandbox_warning(config(AgentSpec(name="command", command=["true"], config={"sandbox": "none"})))
        is None
    )
    assert _sandbox_warning(config(AgentSpec(name="noop"))) is None


def test_auto_with_bubblewrap_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: True)
    assert sandbox.fallback_warning("auto") is None
    assert sandbox.resolve_mode("require") == "bwrap"


def test_an_unknown_mode_is_a_clear_error(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        app,
        ["run", "--scenario", "sre/ad-scaled-to-zero-v1", "--agent", "command", "--command", "true",
         "--sandbox", "strict", "--run-dir", str(tmp_path / "r")],
    )  # fmt: skip
    assert r.exit_code == 2 and "expected auto, require, bwrap or none" in r.output
