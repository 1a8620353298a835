"""``itbench export``: episodes as ATIF v1.4 trajectories (Harbor's RFC 0001), checked against the
schema's fields: the conversation a model saw, its tool calls with their results, tokens and cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import ValidationError
from support.episode_records import episode
from support.run_folders import fake_sre_run

from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.llm.exchange import ExchangeLog
from itbench_agents.report.atif import AtifTrajectory, episode_atif

PLUGINS = Path(__file__).resolve().parents[1] / "harness" / "plugins"
ITBENCH = [sys.executable, "-m", "itbench_agents.cli"]


def _react_events() -> list[dict[str, object]]:
    """Two model calls as the LLM client writes them (``ExchangeLog``), the tool's call and result
    between them, and a second human message the agent's program sent."""
    log = ExchangeLog()
    system, task = SystemMessage("You are an SRE."), HumanMessage("Begin the diagnosis.")
    ask = AIMessage("", tool_calls=[{"name": "kubectl", "args": {"command": "get pods"}, "id": "x1"}])
    result = ToolMessage("ad-1 0/1 CrashLoopBackOff", tool_call_id="x1")
    nudge = HumanMessage("Answer in JSON.")
    return [
        {"type": "env_event", "phase": "task", "detail": {"goal": "Diagnose."}},
        {"type": "model_call", "model": "openai/m", "input_tokens": 100, "output_tokens": 7, "cost_usd": 0.01,
         "prompt": log.prompt([system, task], [{"type": "function", "function": {"name": "kubectl"}}]),
         "response": {"content": "", "tool_calls": [{"name": "kubectl", "args": {"command": "get pods"}}]}},
        {"type": "tool_call", "tool": "kubectl", "args": {"command": "get pods"}},
        {"type": "observation", "tool": "kubectl", "content": "ad-1 0/1 CrashLoopBackOff", "error": None},
        {"type": "model_call", "model": "openai/m", "input_tokens": 140, "output_tokens": 20, "cost_usd": 0.02,
         "prompt": log.prompt([system, task, ask, result, nudge], None),
         "response": {"content": '{"entities": []}', "tool_calls": []}},
        {"type": "agent_message", "content": {"diagnosis": {"entities": []}}},
    ]  # fmt: skip


def test_a_react_conversation_becomes_system_user_and_agent_steps() -> None:
    rec = episode("sre/ad-failure-flag-v1", "react", True, True)
    rec.usage.input_tokens, rec.usage.output_tokens, rec.usage.cost_usd = 240, 27, 0.03
    doc = episode_atif(rec, _react_events())
    steps = [(s.source, s.message) for s in doc.steps]
    assert steps == [
        ("system", "You are an SRE."),
        ("user", "Begin the diagnosis."),
        ("agent", ""),
        ("user", "Answer in JSON."),  # sent later, once: the repeated history is not repeated
        ("agent", '{"entities": []}'),
    ]
    assert [s.step_id for s in doc.steps] == [1, 2, 3, 4, 5]
    call = doc.steps[2].tool_calls[0]  # type: ignore[index]
    assert (call.function_name, call.arguments) == ("kubectl", {"command": "get pods"})
    (res,) = doc.steps[2].observation.results  # type: ignore[union-attr]
    assert res.source_call_id == call.tool_call_id and res.content == "ad-1 0/1 CrashLoopBackOff"
    assert doc.steps[4].metrics.prompt_tokens == 140 and doc.steps[4].model_name == "openai/m"  # type: ignore[union-attr]
    assert doc.final_metrics.total_prompt_tokens == 240 and doc.final_metrics.total_steps == 5  # type: ignore[union-attr]
    assert doc.session_id == rec.episode_id and doc.agent.model_name == "openai/m"
    assert doc.extra["itbench"]["record"]["diagnosis"]["correct"] is True  # type: ignore[index]
    # what is written reads back under the schema, and a field outside it is refused
    text = doc.model_dump_json(exclude_none=True)
    assert AtifTrajectory.model_validate_json(text) == AtifTrajectory.model_validate(json.loads(text))
    bad = json.loads(text)
    bad["steps"][0]["speaker"] = "x"
    with pytest.raises(ValidationError):
        AtifTrajectory.model_validate(bad)


def test_a_rule_based_agent_has_the_task_and_a_step_per_action() -> None:
    rec = episode("sre/ad-scaled-to-zero-v1", "sre-heuristic", True, True)
    events = [
        {"type": "env_event", "phase": "deployed", "detail": {}},
        {"type": "env_event", "phase": "task", "detail": {"goal": "Diagnose and mitigate."}},
        {"type": "tool_call", "tool": "kubectl", "args": {"command": "scale deploy/ad --replicas=1"}},
        {"type": "observation", "tool": "kubectl", "content": "", "error": "forbidden"},
        {"type": "agent_message", "content": "scaled ad back"},
    ]
    doc = episode_atif(rec, events)
    assert [(s.source, s.message) for s in doc.steps] == [
        ("user", "Diagnose and mitigate."),
        ("agent", ""),
        ("agent", "scaled ad back"),
    ]
    assert doc.steps[1].observation.results[0].content == "error: forbidden"  # type: ignore[union-attr]
    assert doc.agent.model_name is None
    phases = [e.get("phase") for e in doc.extra["itbench"]["harness_events"]]  # type: ignore[index]
    assert phases == ["deployed", "task"]  # the harness's events, not steps


def test_itbench_export_writes_one_trajectory_per_episode(tmp_path: Path) -> None:
    sys.path.insert(0, str(PLUGINS))
    run = fake_sre_run(tmp_path / "run")
    r = subprocess.run(
        [*ITBENCH, "export", str(run)], capture_output=True, text=True, timeout=120, check=False
    )
    assert r.returncode == 0, r.stderr
    files = sorted((run / "atif").glob("*.json"))
    ids = sorted(rec.episode_id for rec in read_episodes(run))
    assert [f.stem for f in files] == ids and f"{len(ids)} episode(s)" in r.stdout
    for f in files:
        doc = AtifTrajectory.model_validate_json(f.read_text())
        assert doc.schema_version == "ATIF-v1.4" and doc.session_id == f.stem
    not_a_run = tmp_path / "nothing"
    r = subprocess.run(
        [*ITBENCH, "export", str(not_a_run)], capture_output=True, text=True, timeout=120, check=False
    )
    assert r.returncode == 2 and "not a run folder" in r.stderr and not not_a_run.exists()
