"""``itbench run`` shares each twin scenario's preparation among its agents where that is safe and
leaves no worker idle (``harness/shared.py``): what is grouped, when the run asks for it, and what
an episode that shared its preparation records as its overhead."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.harness import batch
from itbench_agents.harness.batch import BatchSummary, plan
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.episode import EpisodeSpec
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.harness.shared import can_fork, groups, shareable

SRE = ["sre/ad-scaled-to-zero-v1", "sre/ad-failure-flag-v1"]
AGENTS = [AgentSpec(name="noop"), AgentSpec(name="oracle"), AgentSpec(name="noop", label="noop-2")]


def specs(tmp_path: Path, scenarios: list[str], agents: list[AgentSpec] = AGENTS) -> list[EpisodeSpec]:
    config = RunConfig(scenarios=scenarios, agents=agents)
    return plan(config, Catalogue.default(), "r", tmp_path / "r")


def test_the_agents_of_a_twin_scenario_share_and_other_environments_prepare_their_own(
    tmp_path: Path,
) -> None:
    catalogue = Catalogue.default()
    anomaly = next(s.id for s in catalogue._library("finops"))
    ciso = next(s.id for s in catalogue._library("ciso"))
    planned = specs(tmp_path, [*SRE, "finops/forgotten-load-test-v1", anomaly, ciso])
    units = groups(planned)
    shared = [[s.agent.display for s in u] for u in units if len(u) > 1]
    assert shared == [["noop", "oracle", "noop-2"]] * 3  # SRE and FinOps cost incidents: twin scenario files
    alone = sorted((u[0].scenario.id, u[0].agent.display) for u in units if len(u) == 1)
    assert alone == sorted((sid, a.display) for sid in (anomaly, ciso) for a in AGENTS)
    assert [shareable(u[0]) for u in units] == [len(u) > 1 for u in units]
    elsewhere = [dataclasses.replace(s, backend="live") for s in planned[:3]]
    assert [len(u) for u in groups(elsewhere)] == [1, 1, 1]  # another backend: no fork of its cluster


def test_no_sharing_where_it_would_leave_a_worker_idle(tmp_path: Path) -> None:
    one = specs(tmp_path, SRE[:1])
    assert [len(u) for u in groups(one)] == [3]
    assert [len(u) for u in groups(one, keep_busy=1)] == [3]
    assert [len(u) for u in groups(one, keep_busy=2)] == [1, 1, 1]  # 3 episodes side by side, not in a row
    two = specs(tmp_path, SRE)
    assert [len(u) for u in groups(two, keep_busy=2)] == [3, 3]


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What ``itbench run`` asks of ``run_batch`` (which then runs nothing)."""
    seen: list[dict[str, Any]] = []

    def fake(run_dir: Any, specs: list[EpisodeSpec], **kw: Any) -> BatchSummary:
        seen.append({"executor": type(kw.get("executor")).__name__, **kw})
        return BatchSummary(planned=len(specs))

    monkeypatch.setattr(batch, "run_batch", fake)
    return seen


@pytest.mark.parametrize(
    ("args", "shared"),
    [
        (["--concurrency", "2"], True),
        (["--concurrency", "2", "--no-share-preparation"], False),
        (["--executor", "processes"], True),
        ([], False),  # in this process, beside the progress bar's thread: no safe fork
        (["--executor", "in-process"], False),
    ],
)
def test_the_run_shares_with_worker_processes_unless_told_not_to(
    tmp_path: Path, batches: list[dict[str, Any]], args: list[str], shared: bool
) -> None:
    r = CliRunner().invoke(
        app,
        ["run", *(a for s in SRE for a in ("--scenario", s)), "--agent", "noop", "--agent", "oracle",
         "--run-dir", str(tmp_path / "r"), "--no-report", *args],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (kw,) = batches
    assert kw["share_prepared"] is shared
    assert kw["keep_workers_busy"] is True
    assert ("4 episodes from 2 shared preparations" in r.output) is shared


@pytest.mark.skipif(not can_fork(), reason="sharing a preparation needs os.fork")
@pytest.mark.timeout(300)
def test_a_shared_run_records_each_episode_with_its_share_of_the_preparation(tmp_path: Path) -> None:
    from itbench_agents.harness.runfolder import read_episodes

    run_dir = tmp_path / "r"
    r = CliRunner().invoke(
        app,
        ["run", *(a for s in SRE for a in ("--scenario", s)), "--agent", "noop", "--agent", "oracle",
         "--run-dir", str(run_dir), "--no-report", "--concurrency", "2", "--history-s", "0",
         "--churn", "none"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    recs = read_episodes(run_dir)
    assert sorted((x.scenario_id, x.agent) for x in recs) == sorted(
        (s, a) for s in SRE for a in ("noop", "oracle")
    )
    assert {x.timing.preparation_shared_by for x in recs} == {2}
    for x in recs:  # the episode's own process, and half the preparation it started from
        assert x.timing.harness_overhead_s - (x.wall_s - x.timing.agent_wall_s) > 0.05
    passed = {(x.scenario_id, x.agent): bool(x.mitigation and x.mitigation.passed) for x in recs}
    assert passed == {(s, a): a == "oracle" for s in SRE for a in ("noop", "oracle")}


WARM = """
import os, sys
from itbench_agents.agents.base import AgentConfig
from itbench_agents.agents.registry import warm
loaded = lambda: sorted(m for m in ("litellm", "langgraph", "langchain_openai") if m in sys.modules)
warm("noop")
warm("no-such-agent")  # fails in its episode, not here
print(loaded())
warm("sre-react", AgentConfig(model="scripted:script.yaml"))
print(loaded())
warm("sre-react", AgentConfig(model="openai/gpt-4o"))
print(loaded())
warm("sre-react", AgentConfig(model="anthropic/claude-3-5-sonnet-20240620"))
print(loaded(), os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"))
"""


def test_warming_an_agent_imports_what_its_turn_would(tmp_path: Path) -> None:
    """What a shared preparation loads before it forks (``agents.registry.warm``): nothing for a
    non-LLM agent, an LLM agent's graph and its model's chat library only (litellm, seconds to
    import, only for a litellm model; with its packaged price map, as the model layer imports it)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run(
        [sys.executable, "-c", WARM], env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    assert out == [
        "[]",
        "['langgraph']",
        "['langchain_openai', 'langgraph']",
        "['langchain_openai', 'langgraph', 'litellm'] True",
    ]


def test_a_shared_preparation_warms_each_agent_of_its_unit_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from itbench_agents.agents import registry
    from itbench_agents.harness import shared

    warmed: list[tuple[str, str | None]] = []
    monkeypatch.setattr(registry, "warm", lambda name, config: warmed.append((name, config.model)))
    agents = [
        AgentSpec(name="noop"),
        AgentSpec(name="sre-react", model="scripted:a.yaml"),
        AgentSpec(name="noop", label="noop-2"),
    ]
    shared._warm(specs(tmp_path, SRE[:1], agents))
    assert warmed == [("noop", None), ("sre-react", "scripted:a.yaml"), ("noop", None)]


def test_what_an_agent_imports_is_loaded_before_its_timed_turn(tmp_path: Path) -> None:
    """Every episode (shared or not) loads what its agent's turn would import before the turn
    starts (``make_agent_for`` calls ``registry.warm``): the first episode of a process does not
    spend its agent's wall time on imports."""
    import itbench_warmed  # type: ignore[import-not-found]  # tests/harness/plugins

    from itbench_agents.harness.episode import run_episode

    config = RunConfig(
        scenarios=SRE[:1],
        agents=[AgentSpec(name="itbench_warmed:make_agent", model="scripted:x.yaml")],
        environment="itbench_fakes:make_env",
    )
    (spec,) = plan(config, Catalogue.default(), "r", tmp_path / "r")
    rec = run_episode(spec)
    assert rec.termination == "submitted", rec.error
    assert itbench_warmed.WARMED == ["scripted:x.yaml"] and itbench_warmed.AT_TURN == [1]
