"""finops-react with the scripted model: on a cost anomaly (the sandboxed analysis tool, the
answer saved as answer.json, bad replies bounded) through the harness and with the OpenAI-protocol
test server. Its cost-incident graph (the opencost tool, kubectl, the FinOps prompts) runs in
tests/personas/test_finops_twin.py, on that file's shared preparation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from itbench_agents.agents.base import AgentConfig
from itbench_agents.agents.finops_react import make_agent
from itbench_agents.agents.finops_react.anomaly import AnswerError, parse_answer
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.personas.finops.billing import generate
from itbench_agents.personas.finops.library import finops_library

ANOMALY = "finops/anomaly-spike-service-v1"


def _script(tmp_path: Path, name: str, turns: list[dict]) -> str:
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(turns))
    return f"scripted:{f}"


def _run(tmp_path: Path, scenario: str, agents: list[AgentSpec]) -> dict[str, EpisodeRecord]:
    run_dir = tmp_path / "run"
    _, specs, _ = start_run(run_dir, RunConfig(scenarios=[scenario], agents=agents), Catalogue.default())
    run_batch(run_dir, specs)
    return {r.agent: r for r in read_episodes(run_dir)}


def test_the_answer_must_be_resources_with_a_known_type() -> None:
    assert parse_answer('Here: {"resource": [{"name": "checkout", "type": "Application"}]}') == {
        "resource": [{"name": "checkout", "type": "Application"}]
    }
    for bad in (
        "no json",
        '{"resource": []}',
        '{"resource": [{"name": "x", "type": "Team"}]}',
        '{"resource": ',
    ):
        with pytest.raises(AnswerError):
            parse_answer(bad)


def test_an_anomaly_episode_analyses_with_pandas_and_saves_the_answer(tmp_path: Path) -> None:
    sc = next(s for s in finops_library() if s.id == ANOMALY)
    truth = generate(sc).truth  # the script plays a model that found it
    right = [
        {
            "tool_calls": [
                {"name": "analysis", "args": {"code": "df.groupby('Cloud_Service')['unblended_cost'].sum()"}}
            ]
        },
        {"tool_calls": [{"name": "analysis", "args": {"code": "open('/etc/hostname').read(); df.nope"}}]},
        {"content": json.dumps({"resource": truth})},
    ]
    wrong = [
        {"content": "I think it is the database."},  # not the answer's JSON: a format error, bounded
        {"content": json.dumps({"resource": [{"name": "nothing-like-it", "type": "Application"}]})},
    ]
    lazy = [{"content": "no idea"}] * 5
    agents = [
        AgentSpec(name="finops-react", label="right", model=_script(tmp_path, "right", right)),
        AgentSpec(name="finops-react", label="wrong", model=_script(tmp_path, "wrong", wrong)),
        AgentSpec(name="finops-react", label="lazy", model=_script(tmp_path, "lazy", lazy)),
    ]
    recs = _run(tmp_path, ANOMALY, agents)
    r = recs["right"]
    assert r.termination == "submitted", r.error
    assert r.scores["pinpointed"].value == 1.0 and r.scores["f1"].value == 1.0
    assert recs["wrong"].scores["pinpointed"].value == 0.0
    lazy_rec = recs["lazy"]
    assert lazy_rec.scores["pinpointed"].value == 0.0
    assert "no answer.json" in lazy_rec.scores["pinpointed"].explanation


def test_the_opencost_tool_comes_with_any_tool_selection() -> None:
    def tools(selection: str) -> str:
        return make_agent(AgentConfig(model="scripted:x", tools=selection)).tools()

    assert tools("direct") == "direct,+opencost"
    assert tools("nl2") == "nl2,+opencost"
    assert tools("direct,+opencost") == "direct,+opencost"
    assert tools("direct,-opencost") == "direct,-opencost"  # taken away on purpose: kept away


def test_the_openai_protocol_server_drives_an_anomaly_task(tmp_path: Path) -> None:
    from itbench_agents.core.endpoints import Endpoints
    from itbench_agents.core.task import Task
    from itbench_agents.llm.testing_server import OpenAITestServer
    from itbench_agents.personas.finops.snapshot import write_snapshot

    sc = next(s for s in finops_library() if s.id == ANOMALY)
    bill = generate(sc)
    work = tmp_path / "work"
    work.mkdir()
    write_snapshot(bill, work)
    turns = [
        {"tool_calls": [{"name": "analysis", "args": {"code": "df['date'].max()"}}]},
        {"content": json.dumps({"resource": bill.truth})},
    ]
    task = Task(
        goal="Find the resource the anomaly comes from.",
        kind="anomaly",
        persona="finops",
        endpoints=Endpoints(kube_url="http://127.0.0.1:9", kubeconfig="/nonexistent"),
        workdir=str(work),
    )
    from itbench_agents.llm.scripted import load_script

    script = Path(_script(tmp_path, "server", turns).removeprefix("scripted:"))
    with OpenAITestServer(load_script(script)) as srv:
        out = make_agent(AgentConfig(model="openai/test-model", base_url=srv.url)).run(task, lambda e: None)
        first = srv.requests[0]
        assert [t["function"]["name"] for t in first["tools"]] == ["analysis"]
        assert "FinOps analyst" in first["messages"][0]["content"]
        assert "unblended_cost" in first["messages"][0]["content"]  # the data's first lines
        tool_msgs = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
        assert tool_msgs and tool_msgs[0]["content"].strip() == max(r[0] for r in bill.rows), tool_msgs
    assert out.extra["termination"] == "completed" and out.steps == 2
    assert json.loads((work / "answer.json").read_text()) == {"resource": bill.truth}
