"""Episodes that share one preparation (``harness/shared.py``) score as episodes that prepare
their own environment: same outcome, same checks, same baseline; and the preparation ran once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from itbench_agents.core.task import Limits
from itbench_agents.evaluation.topology import Topology
from itbench_agents.harness.batch import plan
from itbench_agents.harness.episode import EpisodeSpec, run_episode
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, RunConfig
from itbench_agents.harness.shared import can_fork, groups, run_shared
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.twin.clock import VirtualClock

SCENARIO = "sre/ad-scaled-to-zero-v1"
STRATEGIES = ["noop", "oracle", "audit-scale-loadgen"]

pytestmark = pytest.mark.skipif(not can_fork(), reason="sharing a preparation needs os.fork")


def specs(run_dir: Path, strategies: list[str] = STRATEGIES) -> list[EpisodeSpec]:
    config = RunConfig(
        scenarios=[SCENARIO],
        agents=[AgentSpec(name=s) for s in strategies],
        history_s=0,
        limits=Limits(max_steps=50, wall_time_s=60),
    )
    return plan(config, ScenarioRegistry.default(), run_dir.name, run_dir)


def outcome(rec: EpisodeRecord) -> tuple[object, ...]:
    mit = rec.mitigation
    return (
        rec.episode_id,
        rec.termination,
        rec.error,
        rec.diagnosis.correct if rec.diagnosis else None,
        # the checks' verdicts; their wording (which alerts are pending) follows the agent's wall time
        None if mit is None else (mit.passed, [(c.name, c.ok) for c in mit.checks]),
    )


def phases(run_dir: Path, rec: EpisodeRecord) -> dict[str, object]:
    path = run_dir / "episodes" / rec.episode_id / "trajectory.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return {e["phase"]: e.get("detail") for e in events if e.get("type") == "env_event"}


def test_specs_of_one_scenario_trial_and_seed_share(tmp_path: Path) -> None:
    two = specs(tmp_path / "a") + specs(tmp_path / "b", ["noop"])
    assert [len(g) for g in groups(two)] == [4]  # the run folder is no part of the preparation
    other = plan(
        RunConfig(scenarios=[SCENARIO], agents=[AgentSpec(name="noop")], trials=2, history_s=0),
        ScenarioRegistry.default(),
        "c",
        tmp_path / "c",
    )
    assert [len(g) for g in groups(other)] == [1, 1]  # another trial, another seed


@pytest.fixture
def one_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every preparation's clock starts at the same minute (a fresh twin starts at the whole minute
    before "now minus its history": two preparations a minute boundary apart differ by 60 s)."""
    from itbench_agents.harness import twin_backend

    start = twin_backend.harness_clock(0.0).now()
    monkeypatch.setattr(
        twin_backend,
        "harness_clock",
        lambda history_s, grid_s=60.0: VirtualClock.paused_at(start - history_s),
    )


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_a_shared_preparation_scores_as_a_fresh_one(tmp_path: Path, one_start: None) -> None:
    fresh_dir, shared_dir = tmp_path / "fresh", tmp_path / "shared"
    fresh = [run_episode(s) for s in specs(fresh_dir)]
    shared = run_shared(specs(shared_dir))
    assert [outcome(r) for r in shared] == [outcome(r) for r in fresh]
    assert [r.termination for r in shared] == ["submitted"] * len(STRATEGIES)
    assert [r.mitigation and r.mitigation.passed for r in shared] == [False, True, False]
    for a, b in zip(fresh, shared, strict=True):
        pa, pb = phases(fresh_dir, a), phases(shared_dir, b)
        assert pb["deployed"] == {**pa["deployed"], "shared_by": len(STRATEGIES)}  # type: ignore[dict-item]
        assert pa["injected"] == pb["injected"] and pa["alerts"] == pb["alerts"]
        base_a = json.loads((fresh_dir / "episodes" / a.episode_id / "baseline.json").read_text())
        base_b = json.loads((shared_dir / "episodes" / b.episode_id / "baseline.json").read_text())
        assert base_a.keys() == base_b.keys()
        assert base_a["objects"] == base_b["objects"]


@pytest.mark.timeout(300)
def test_a_batch_shares_preparations_through_its_worker_pool(tmp_path: Path) -> None:
    from itbench_agents.harness.batch import run_batch, start_run
    from itbench_agents.harness.runfolder import read_episodes

    run_dir = tmp_path / "run"
    config = RunConfig(
        scenarios=[SCENARIO],
        agents=[AgentSpec(name="noop"), AgentSpec(name="audit-scale-loadgen")],
        history_s=0,
        limits=Limits(max_steps=50, wall_time_s=60),
    )
    _, todo, _ = start_run(run_dir, config, ScenarioRegistry.default())
    summary = run_batch(run_dir, todo, concurrency=2, share_prepared=True)
    assert summary.ran == 2 and summary.errors == 0
    recorded = {r.episode_id: r for r in read_episodes(run_dir)}
    assert sorted(recorded) == sorted(s.episode_id for s in todo)
    for rec in recorded.values():
        assert phases(run_dir, rec)["deployed"]["shared_by"] == 2  # type: ignore[index]
    # the pods that existed when the alerts fired are recorded with the end state (the scorer
    # accepts a pod name only for a pod that existed): the load generator's, gone once scaled down
    topo = {
        rec.agent: Topology.read(run_dir / "episodes" / rec.episode_id / "topology.json")
        for rec in recorded.values()
    }
    loadgen = {k for k in topo["noop"].at_fault if k.startswith("otel-demo/pod/load-generator-")}
    assert loadgen and topo["audit-scale-loadgen"].at_fault == topo["noop"].at_fault
    assert not loadgen & topo["audit-scale-loadgen"].nodes and loadgen <= topo["noop"].nodes
    # resumed, nothing is left to run
    assert run_batch(run_dir, todo, concurrency=2, share_prepared=True).ran == 0


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_a_child_that_dies_is_a_harness_error_and_the_others_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from itbench_agents.harness import shared

    real = shared.run_episode

    def dies_on_noop(spec: EpisodeSpec, prepared: object = None) -> EpisodeRecord:
        if spec.agent.name == "noop":
            os._exit(3)  # as a segfault or an OOM kill would end the episode's process
        return real(spec, prepared)  # type: ignore[arg-type]

    monkeypatch.setattr(shared, "run_episode", dies_on_noop)
    recs = run_shared(specs(tmp_path / "run", ["noop", "oracle"]))
    assert [r.termination for r in recs] == ["harness_error", "submitted"]
    assert "without a record" in (recs[0].error or "")
    assert recs[1].mitigation is not None and recs[1].mitigation.passed
