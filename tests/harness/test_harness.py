"""Episodes, limits, terminations, run folder, resume, re-score — on a fake environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from itbench_agents.core.task import Limits
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.harness.rescore import rescore_run
from itbench_agents.harness.runfolder import RunFolderError, read_episodes, read_manifest
from itbench_agents.harness.trajectory import read_trajectory
from itbench_agents.scenario.registry import ScenarioRegistry

REPO = Path(__file__).resolve().parents[2]
ENV = "itbench_fakes:make_env"
FLAG = "sre/ad-failure-flag-v1"
CONTROL = "sre/control-otel-demo-healthy-v1"


@pytest.fixture(scope="module")
def registry() -> ScenarioRegistry:
    return ScenarioRegistry.default()


def _run(
    tmp_path: Path,
    registry: ScenarioRegistry,
    agent: str,
    scenarios: list[str],
    *,
    trials: int = 1,
    limits: Limits | None = None,
    command: list[str] | None = None,
    concurrency: int = 1,
    **kw: object,
):
    cfg = RunConfig(
        scenarios=scenarios,
        agents=[AgentSpec(name=agent, command=command)],
        trials=trials,
        limits=limits or Limits(),
        environment=ENV,
    )
    run_dir = tmp_path / "run"
    _, specs, _ = start_run(run_dir, cfg, registry)
    summary = run_batch(run_dir, specs, concurrency=concurrency, **kw)  # type: ignore[arg-type]
    return run_dir, summary


def test_good_agent_scores_full_and_writes_the_run_folder(tmp_path: Path, registry: ScenarioRegistry) -> None:
    run_dir, summary = _run(tmp_path, registry, "itbench_fakes:good", [FLAG, CONTROL], trials=2)
    recs = read_episodes(run_dir)
    assert len(recs) == 4 and summary.ran == 4
    for r in recs:
        assert r.termination == "submitted"
        assert r.diagnosis is not None and r.diagnosis.correct, r
        assert r.diagnosis.ntam_fl == pytest.approx(1.0)
    fault = [r for r in recs if r.scenario_id == FLAG]
    assert all(r.mitigation and r.mitigation.passed for r in fault)
    assert all(r.timing.mttr_twin_s == 0 or r.timing.mttr_twin_s < float("inf") for r in fault)
    ctl = [r for r in recs if r.scenario_id == CONTROL]
    assert all(r.mitigation and not r.mitigation.applicable for r in ctl)
    m = read_manifest(run_dir)
    assert m.episodes_planned == 4 and m.versions["python"]
    ep = run_dir / "episodes" / fault[0].episode_id
    types = [e.type for e in read_trajectory(ep / "trajectory.jsonl")]  # type: ignore[attr-defined]
    assert {"env_event", "tool_call", "observation", "model_call", "score"} <= set(types)
    assert (
        (ep / "output.json").exists()
        and (ep / "topology.json").exists()
        and (ep / "mitigation.json").exists()
    )
    assert fault[0].usage.input_tokens == 10 and fault[0].usage.tool_calls == 1


def test_twin_mttd_is_taken_when_the_agent_diagnosed(tmp_path: Path, registry: ScenarioRegistry) -> None:
    run_dir, _ = _run(tmp_path, registry, "itbench_fakes:waiting", [FLAG])
    (rec,) = read_episodes(run_dir)
    t = rec.timing
    assert t.agent_twin_s >= 600  # the agent fast-forwarded 600 s after diagnosing
    assert t.diagnosis_twin_s is not None and t.diagnosis_twin_s < 60
    assert t.mttd_twin_s == t.diagnosis_twin_s
    assert t.mttr_twin_s == t.agent_twin_s  # mitigation is only done when the agent is
    again = rescore_run(run_dir, registry, write=False)
    assert again[0].timing.mttd_twin_s == t.mttd_twin_s


def test_noop_gets_only_controls_right(tmp_path: Path, registry: ScenarioRegistry) -> None:
    run_dir, _ = _run(tmp_path, registry, "noop", [FLAG, CONTROL])
    by = {r.scenario_id: r for r in read_episodes(run_dir)}
    assert by[CONTROL].diagnosis and by[CONTROL].diagnosis.correct
    assert by[FLAG].diagnosis and not by[FLAG].diagnosis.correct
    assert by[FLAG].mitigation and not by[FLAG].mitigation.passed
    assert by[FLAG].timing.mttd_wall_s == float("inf")


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("echo '{not json' > agent_output.json", "not JSON"),
        ("echo '[1, 2]' > agent_output.json", "JSON list"),
        ('echo \'{"entities": [{"nam": 1}]}\' > agent_output.json', "does not follow the schema"),
        ("true", "was not written"),
    ],
)
def test_command_agent_bad_output_scores_zero_with_reason(
    tmp_path: Path, registry: ScenarioRegistry, script: str, reason: str
) -> None:
    run_dir, _ = _run(tmp_path, registry, "command", [FLAG], command=["sh", "-c", script])
    (r,) = read_episodes(run_dir)
    assert r.termination == "submitted"
    assert r.diagnosis is not None and not r.diagnosis.correct
    assert r.diagnosis.reason and reason in r.diagnosis.reason


def test_command_agent_gets_the_environment(tmp_path: Path, registry: ScenarioRegistry) -> None:
    script = (
        'printf \'{"type": "tool_call", "tool": "sh"}\\n\' >> "$ITBENCH_EVENTS"; '
        'echo "$KUBECONFIG|$ITBENCH_WORKDIR|$ITBENCH_TASK" > seen.txt; '
        'echo \'{"entities": [{"name": "otel-demo/Deployment/ad", "contributing_factor": true}]}\' > agent_output.json'
    )
    run_dir, _ = _run(tmp_path, registry, "command", [FLAG], command=["sh", "-c", script])
    (r,) = read_episodes(run_dir)
    assert r.diagnosis and r.diagnosis.correct and r.steps == 1
    seen = (run_dir / "episodes" / r.episode_id / "work" / "seen.txt").read_text()
    kube, work, goal = seen.strip().split("|")
    assert kube.endswith("kubeconfig") and Path(kube).is_absolute() and goal
    # the agent worked in a private folder outside the run folder, copied back afterwards
    assert Path(work).is_absolute() and not Path(work).is_relative_to(run_dir.resolve())
    assert not Path(work).exists()


def test_limits_and_terminations(tmp_path: Path, registry: ScenarioRegistry) -> None:
    cases = {
        "itbench_fakes:chatty": ("max_steps", Limits(max_steps=5)),
        "itbench_fakes:crash": ("agent_error", Limits()),
        "itbench_fakes:sleepy": ("timeout", Limits(wall_time_s=0.2)),
        "itbench_fakes:spendy": ("cost_limit", Limits(max_cost_usd=1.0)),
        "itbench_fakes:self_limited": ("max_steps", Limits()),
    }
    for i, (agent, (want, limits)) in enumerate(cases.items()):
        run_dir, _ = _run(tmp_path / str(i), registry, agent, [FLAG], limits=limits)
        (r,) = read_episodes(run_dir)
        assert r.termination == want, (agent, r.termination, r.error)
        assert r.scored and r.diagnosis is not None and not r.diagnosis.correct


def test_environment_failure_is_not_the_agents_fault(
    tmp_path: Path, registry: ScenarioRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ENV_FAIL", FLAG)
    run_dir, summary = _run(tmp_path, registry, "itbench_fakes:good", [FLAG, CONTROL])
    by = {r.scenario_id: r for r in read_episodes(run_dir)}
    assert by[FLAG].termination == "env_error" and not by[FLAG].scored
    assert by[FLAG].diagnosis is None and by[FLAG].mitigation is None
    assert by[CONTROL].termination == "submitted"
    from itbench_agents.report.aggregate import summarize

    s = summarize(list(by.values()))
    assert s.overall[0].bad_runs == 1 and s.overall[0].episodes == 1


def test_fail_fast_stops_after_first_failure(
    tmp_path: Path, registry: ScenarioRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ENV_FAIL", FLAG)
    run_dir, summary = _run(
        tmp_path, registry, "itbench_fakes:good", [FLAG, CONTROL], trials=2, fail_fast=True
    )
    assert summary.stopped_early and summary.ran == 1


def test_resume_skips_done_episodes_and_config_mismatch_is_refused(
    tmp_path: Path, registry: ScenarioRegistry
) -> None:
    run_dir, s1 = _run(tmp_path, registry, "itbench_fakes:good", [FLAG], trials=2)
    assert s1.ran == 2
    _, s2 = _run(tmp_path, registry, "itbench_fakes:good", [FLAG], trials=2)
    assert s2.ran == 0 and s2.skipped == 2
    with pytest.raises(RunFolderError, match="different run"):
        _run(tmp_path, registry, "itbench_fakes:good", [FLAG], trials=3)
    # a torn last line (kill -9 mid-write) is dropped and the episode re-run
    p = run_dir / "episodes.jsonl"
    lines = p.read_text().splitlines()
    p.write_text(lines[0] + "\n" + lines[1][:40])
    _, s3 = _run(tmp_path, registry, "itbench_fakes:good", [FLAG], trials=2)
    assert s3.ran == 1
    assert len(p.read_text().splitlines()) == 2 and len(read_episodes(run_dir)) == 2


def test_older_schema_version_gets_a_clear_message(tmp_path: Path, registry: ScenarioRegistry) -> None:
    run_dir, _ = _run(tmp_path, registry, "noop", [FLAG])
    m = json.loads((run_dir / "run.json").read_text())
    m["schema_version"] = 0
    (run_dir / "run.json").write_text(json.dumps(m))
    with pytest.raises(RunFolderError, match="schema version 0"):
        read_manifest(run_dir)


def test_rescore_from_files_reproduces_scores(tmp_path: Path, registry: ScenarioRegistry) -> None:
    run_dir, _ = _run(tmp_path, registry, "itbench_fakes:good", [FLAG, CONTROL])
    before = {r.key: r for r in read_episodes(run_dir)}
    after = {r.key: r for r in rescore_run(run_dir, registry)}
    for k, r in before.items():
        assert after[k].diagnosis == r.diagnosis
        assert after[k].mitigation == r.mitigation


def test_process_pool_concurrency(tmp_path: Path, registry: ScenarioRegistry) -> None:
    run_dir, summary = _run(
        tmp_path, registry, "itbench_fakes:good", [FLAG, CONTROL], trials=2, concurrency=2
    )
    recs = read_episodes(run_dir)
    assert len(recs) == 4 and all(r.termination == "submitted" for r in recs)
    assert len({r.seed for r in recs}) == 4  # per-trial seeds differ


@pytest.mark.slow
def test_kill_9_mid_batch_then_same_command_finishes_with_exact_count(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "itbench_agents.cli",
        "run",
        "--scenario",
        FLAG,
        "--scenario",
        CONTROL,
        "--agent",
        "itbench_fakes:slow",
        "--trials",
        "4",
        "--environment",
        ENV,
        "--run-dir",
        str(run_dir),
        "--no-report",
    ]
    env = dict(os.environ)
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    log = run_dir / "episodes.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(read_episodes(run_dir))
    assert 2 <= done_before < 8
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    keys = [(json.loads(x)["scenario_id"], json.loads(x)["trial"]) for x in lines]
    assert len(lines) == 8 and len(set(keys)) == 8
    assert "already done" in r.stderr


def test_a_dead_worker_is_a_harness_error_and_the_batch_goes_on(
    tmp_path: Path, registry: ScenarioRegistry
) -> None:
    run_dir, summary = _run(
        tmp_path,
        registry,
        "itbench_fakes:dying",
        [FLAG, CONTROL, "sre/ad-scaled-to-zero-v1"],
        trials=2,
        concurrency=2,
    )
    recs = read_episodes(run_dir)
    assert len(recs) == 6
    by = {(r.scenario_id, r.trial): r for r in recs}
    assert all(by[(FLAG, t)].termination == "harness_error" and not by[(FLAG, t)].scored for t in (0, 1))
    assert by[(CONTROL, 0)].termination in ("submitted", "harness_error")  # may share the broken pool
    assert sum(r.termination == "submitted" for r in recs) >= 2
