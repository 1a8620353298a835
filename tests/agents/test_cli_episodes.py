"""`itbench run --suite/--scenario ... --agent sre-react --model scripted:...` on the twin, end to
end through the harness: the scripted agent diagnoses and mitigates a real scenario; the same with
`--model openai/<m> --base-url` against the local OpenAI-protocol test server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from itbench_agents.llm.scripted import load_script
from itbench_agents.llm.testing_server import OpenAITestServer

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

SCENARIO = "sre/ad-scaled-to-zero-v1"
TURNS = [
    {"tool_calls": [{"name": "alerts", "args": {}}]},
    {"tool_calls": [{"name": "kubectl", "args": {"command": "get deployment ad -n otel-demo"}}]},
    {
        "content": json.dumps(
            {
                "entities": [
                    {
                        "name": "otel-demo/Deployment/ad",
                        "contributing_factor": True,
                        "reasoning": "scaled to 0",
                        "evidence": "0/0 ready",
                    }
                ]
            }
        )
    },  # fmt: skip
    {
        "tool_calls": [
            {"name": "kubectl", "args": {"command": "scale deployment/ad --replicas=1 -n otel-demo"}}
        ]
    },
    {"content": "Scaled ad back to one replica."},
]


def _itbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-m", "itbench_agents.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def _episode(run_dir: Path) -> dict:
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def _check(res: subprocess.CompletedProcess[str], run_dir: Path) -> dict:
    if not (run_dir / "episodes.jsonl").exists():
        pytest.fail(f"itbench run failed ({res.returncode}): {res.stderr[-2000:]}")
    ep = _episode(run_dir)
    if ep["termination"] in ("env_error", "harness_error"):
        pytest.skip(f"the environment failed, not the agent: {ep.get('error')}")
    assert ep["termination"] == "submitted", ep
    assert ep["diagnosis"]["correct"], ep["diagnosis"]
    assert ep["mitigation"]["passed"], ep["mitigation"]
    return ep


def test_scripted_sre_react_episode_on_twin(tmp_path: Path) -> None:
    script = tmp_path / "ad.yaml"
    script.write_text(yaml.safe_dump(TURNS))
    run_dir = tmp_path / "run"
    res = _itbench("run", "--scenario", SCENARIO, "--agent", "sre-react", "--model", f"scripted:{script}",
                   "--run-dir", str(run_dir), "--no-report")  # fmt: skip
    ep = _check(res, run_dir)
    traj = run_dir / "episodes" / ep["episode_id"] / "trajectory.jsonl"
    events = [json.loads(line) for line in traj.read_text().splitlines()]
    assert sum(e["type"] == "model_call" for e in events) == 5
    assert sum(e["type"] == "tool_call" for e in events) == 3
    # the same episode as an ATIF trajectory (itbench export): a step per model call, each tool
    # call with its result, the system prompts and the task first
    from itbench_agents.report.atif import AtifTrajectory, export_run

    (path,) = export_run(run_dir)
    doc = AtifTrajectory.model_validate_json(path.read_text())
    agent = [s for s in doc.steps if s.source == "agent"]
    assert len(agent) == 5 and doc.steps[0].source == "system" and doc.steps[1].source == "user"
    assert [c.function_name for s in agent for c in s.tool_calls or []] == ["alerts", "kubectl", "kubectl"]
    assert all(s.observation and s.observation.results[0].content for s in agent if s.tool_calls)


def test_openai_protocol_sre_react_episode_on_twin(tmp_path: Path) -> None:
    help_text = _itbench("run", "--help").stdout
    if "--base-url" not in help_text:
        pytest.skip("`itbench run` has no --base-url option yet (harness CLI)")
    script = tmp_path / "ad.yaml"
    script.write_text(yaml.safe_dump(TURNS))
    run_dir = tmp_path / "run"
    with OpenAITestServer(load_script(script)) as srv:
        res = _itbench("run", "--scenario", SCENARIO, "--agent", "sre-react", "--model", "openai/test-model",
                       "--base-url", srv.url, "--run-dir", str(run_dir), "--no-report")  # fmt: skip
        assert len(srv.requests) == 5
    _check(res, run_dir)


def test_openai_protocol_episode_through_the_harness(tmp_path: Path) -> None:
    """The harness's episode runner with AgentSpec.config = {base_url}: the real ChatOpenAI client
    talks to the local OpenAI-protocol server for a whole diagnosis + mitigation episode."""
    from itbench_agents.harness.episode import EpisodeSpec, run_episode
    from itbench_agents.harness.records import AgentSpec
    from itbench_agents.scenario.registry import ScenarioRegistry

    script = tmp_path / "ad.yaml"
    script.write_text(yaml.safe_dump(TURNS))
    scenario = ScenarioRegistry.default().get(SCENARIO)
    with OpenAITestServer(load_script(script)) as srv:
        agent = AgentSpec(name="sre-react", model="openai/test-model", config={"base_url": srv.url})
        rec = run_episode(
            EpisodeSpec(
                run_id="t", run_dir=str(tmp_path / "run"), scenario=scenario, agent=agent, trial=0, seed=1
            )
        )
        assert len(srv.requests) == 5
        assert all(r["model"] == "test-model" for r in srv.requests)
    if rec.termination in ("env_error", "harness_error"):
        pytest.skip(f"the environment failed, not the agent: {rec.error}")
    assert rec.termination == "submitted", rec.error
    assert rec.diagnosis is not None and rec.diagnosis.correct
    assert rec.mitigation is not None and rec.mitigation.passed
    assert rec.usage.input_tokens > 0
