"""`itbench problem start | submit | stop | status`: a scenario brought up with its fault in place,
worked on with real kubectl and the agent's credential, then scored by the harness as any episode
is; a lazy submission scores nothing; `stop` tears down and records nothing; bad input is a clear
error that leaves a running problem as it was."""

from __future__ import annotations

import os
import shlex
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from itbench_agents.agents.oracle import ground_truth_diagnosis
from itbench_agents.cli import app
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.problem.state import ProblemDir
from itbench_agents.scenario.registry import ScenarioRegistry

runner = CliRunner()
SCENARIO = "sre/ad-scaled-to-zero-v1"
FIX = 'kubectl -n otel-demo patch deployment ad --type merge -p \'{"spec":{"replicas":1}}\''


@pytest.fixture()
def problem(tmp_path: Path) -> Iterator[tuple[ProblemDir, dict[str, str]]]:
    folder = ProblemDir(tmp_path / "state")
    env = {"ITBENCH_PROBLEM_DIR": str(folder.root), "COLUMNS": "200"}
    yield folder, env
    if folder.server_pid() is not None:  # a failed test must not leave a twin running
        runner.invoke(app, ["problem", "stop"], env=env)


def start(env: dict[str, str], run_dir: Path) -> str:
    r = runner.invoke(
        app, ["problem", "start", SCENARIO, "--history-s", "600", "--run-dir", str(run_dir)], env=env
    )
    assert r.exit_code == 0, r.output
    return r.output


def shell(folder: ProblemDir, command: str) -> subprocess.CompletedProcess[str]:
    """``command`` in a shell that sourced the problem's env.sh, as a person would."""
    script = f"source {shlex.quote(str(folder.env_file))} && {command}"
    clean = {"PATH": os.environ["PATH"], "HOME": str(folder.root)}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=clean, timeout=60)


@pytest.mark.slow
def test_fixed_by_hand_and_diagnosed_scores_like_any_episode(
    tmp_path: Path, problem: tuple[ProblemDir, dict[str, str]]
) -> None:
    folder, env = problem
    out = start(env, tmp_path / "run")
    task = folder.task()
    assert task is not None and task.scenario == SCENARIO
    assert task.workdir in out and task.endpoints.kubeconfig in out and "itbench mcp serve" in out
    # the printed status is the same problem
    r = runner.invoke(app, ["problem", "status"], env=env)
    assert r.exit_code == 0 and task.endpoints.kubeconfig in r.output
    # real kubectl with the agent's credential, from the variables env.sh exports
    seen = shell(folder, "kubectl get deployment ad -o jsonpath='{.spec.replicas}'")
    assert seen.returncode == 0 and seen.stdout == "0", seen.stderr
    denied = shell(folder, "kubectl get secrets -n kube-system")
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
    fixed = shell(folder, FIX)
    assert fixed.returncode == 0, fixed.stderr
    diagnosis = tmp_path / "diagnosis.json"
    scenario = ScenarioRegistry.default().get(SCENARIO)
    diagnosis.write_text(ground_truth_diagnosis(scenario).model_dump_json())

    r = runner.invoke(app, ["problem", "submit", "--output", str(diagnosis)], env=env)
    assert r.exit_code == 0, r.output
    assert "diagnosis   passed" in r.output and "mitigation  passed" in r.output
    (rec,) = read_episodes(tmp_path / "run")  # the harness's signed record
    assert rec.agent == "interactive" and rec.termination == "submitted"
    assert rec.diagnosis is not None and rec.diagnosis.correct
    assert rec.mitigation is not None and rec.mitigation.passed
    assert folder.server_pid() is None and folder.task() is None
    with pytest.raises(urllib.error.URLError):  # the twin is gone
        urllib.request.urlopen(task.endpoints.kube_url + "/version", timeout=2)


@pytest.mark.slow
def test_a_lazy_submission_scores_nothing_and_stop_records_nothing(
    tmp_path: Path, problem: tuple[ProblemDir, dict[str, str]]
) -> None:
    folder, env = problem
    start(env, tmp_path / "lazy")
    r = runner.invoke(app, ["problem", "submit"], env=env)
    assert r.exit_code == 0, r.output
    (rec,) = read_episodes(tmp_path / "lazy")
    assert rec.diagnosis is not None and not rec.diagnosis.correct
    assert rec.mitigation is not None and not rec.mitigation.passed
    assert "agent_output.json was not written" in (rec.diagnosis.reason or "") + r.output

    start(env, tmp_path / "stopped")
    # bad input leaves the running problem as it was
    again = runner.invoke(app, ["problem", "start", SCENARIO], env=env)
    assert again.exit_code == 2 and "already running" in again.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"entities": "otel-demo/Deployment/ad"}')
    r = runner.invoke(app, ["problem", "submit", "--output", str(bad)], env=env)
    assert r.exit_code == 2 and "does not follow the schema: entities" in r.output
    assert "nothing was submitted" in r.output and not folder.submitted()
    task = folder.task()
    assert task is not None and folder.server_pid() is not None
    r = runner.invoke(app, ["problem", "stop"], env=env)
    assert r.exit_code == 0 and "nothing was recorded" in r.output, r.output
    assert folder.server_pid() is None and folder.task() is None
    assert read_episodes(tmp_path / "stopped") == []
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(task.endpoints.kube_url + "/version", timeout=2)


def test_without_a_problem_submit_stop_and_status_say_so(problem: tuple[ProblemDir, dict[str, str]]) -> None:
    _, env = problem
    for command in (["submit"], ["stop"], ["status"]):
        r = runner.invoke(app, ["problem", *command], env=env)
        assert r.exit_code == 1 and "no problem is running" in r.output, (command, r.output)


def test_an_unknown_scenario_is_refused_before_anything_starts(
    problem: tuple[ProblemDir, dict[str, str]],
) -> None:
    folder, env = problem
    r = runner.invoke(app, ["problem", "start", "sre/ad-scaled-to-zro-v1"], env=env)
    assert r.exit_code == 2 and "sre/ad-scaled-to-zero-v1" in r.output  # did you mean
    assert folder.server_pid() is None and not folder.request_file.exists()
    r = runner.invoke(app, ["problem", "start", SCENARIO, "--churn", "lots"], env=env)
    assert r.exit_code == 2 and "--churn" in r.output


@pytest.mark.slow
def test_a_ciso_problem_gets_the_opa_command_and_an_empty_submission_scores_zero(
    tmp_path: Path, problem: tuple[ProblemDir, dict[str, str]]
) -> None:
    folder, env = problem
    sid = "ciso/kyverno-added-capabilities-v1"
    r = runner.invoke(app, ["problem", "start", sid, "--run-dir", str(tmp_path / "ciso")], env=env)
    assert r.exit_code == 0, r.output
    assert "Kyverno policy" in r.output and "--output" not in r.output  # no diagnosis in this task
    opa = shell(folder, "command -v opa")
    assert opa.returncode == 0 and opa.stdout.strip() == str(folder.bin_dir / "opa"), opa.stderr
    r = runner.invoke(app, ["problem", "submit"], env=env)
    assert r.exit_code == 0, r.output
    (rec,) = read_episodes(tmp_path / "ciso")
    assert rec.persona == "ciso" and rec.scores and all(s.value == 0.0 for s in rec.scores.values())
