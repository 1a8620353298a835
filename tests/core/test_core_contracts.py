"""The contracts in itbench_agents/core as agents and the harness rely on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from itbench_agents.core.endpoints import Endpoints
from itbench_agents.core.events import ModelCall, Note, ToolCall, to_event
from itbench_agents.core.output import AgentOutput, Diagnosis, DiagnosisEntity, write_agent_output
from itbench_agents.core.score import Score
from itbench_agents.core.task import Task

ENDPOINTS = Endpoints(kubeconfig="/tmp/kc", kube_url="http://127.0.0.1:1")


def test_a_task_refuses_fields_that_would_tell_the_agent_the_scenario() -> None:
    with pytest.raises(ValidationError, match="scenario_id"):
        Task(goal="g", endpoints=ENDPOINTS, workdir="/tmp/w", scenario_id="sre/x")  # type: ignore[call-arg]


def test_an_agents_dict_becomes_a_typed_event_or_a_note() -> None:
    assert isinstance(to_event({"type": "tool_call", "tool": "kubectl", "args": ["get", "pods"]}), ToolCall)
    assert isinstance(to_event({"type": "model_call", "input_tokens": 3}), ModelCall)
    bad = to_event({"type": "tool_call"})  # no tool: does not fit, kept as a note
    assert isinstance(bad, Note) and bad.raw == {"type": "tool_call"} and "required" in bad.message.lower()
    odd = to_event({"type": "mystery", "payload": object()})
    assert isinstance(odd, Note) and isinstance(odd.raw, str)  # not JSON: its repr


def test_the_agent_output_file_is_itbench_lites_shape(tmp_path: Path) -> None:
    out = AgentOutput(diagnosis=Diagnosis(entities=[DiagnosisEntity(name="otel-demo/Deployment/ad")]))
    data = json.loads(write_agent_output(tmp_path, out).read_text())
    assert set(data) == {"entities", "propagations", "alerts_explained"}
    assert data["entities"][0]["name"] == "otel-demo/Deployment/ad"
    assert json.loads(write_agent_output(tmp_path, AgentOutput()).read_text()) == {}


def test_a_score_passes_only_at_one() -> None:
    assert Score(value=1.0).passed and not Score(value=0.99).passed


def test_endpoints_round_trip_through_their_file(tmp_path: Path) -> None:
    path = ENDPOINTS.model_copy(update={"prometheus_url": "http://p"}).write(
        tmp_path / "e" / "endpoints.json"
    )
    assert Endpoints.read(path).prometheus_url == "http://p"
