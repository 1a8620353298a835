"""sre-react end to end on a small twin cluster (real kubectl) with fake observability APIs:
scripted model, the OpenAI-protocol test server, record / replay, and bounded bad replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from shop_fixtures import broken_shop

from itbench_agents.agents.base import AgentConfig
from itbench_agents.agents.sre_react import make_agent, preflight
from itbench_agents.core.task import Task
from itbench_agents.llm.models import ModelConfigError
from itbench_agents.llm.scripted import load_script
from itbench_agents.llm.testing_server import OpenAITestServer

DIAGNOSIS = {
    "entities": [
        {
            "name": "shop/Deployment/cart",
            "contributing_factor": True,
            "reasoning": "scaled to 0",
            "evidence": "0/0 replicas",
        },
        {"name": "shop/Service/frontend", "contributing_factor": False},
    ],
    "propagations": [
        {
            "source": "shop/Deployment/cart",
            "target": "shop/Service/checkout",
            "condition": "no endpoints",
            "effect": "errors",
        }
    ],
    "alerts_explained": [{"alert": "HighRequestErrorRate", "explanation": "cart down", "explained": True}],
}

LOOK = {"tool_calls": [{"name": "kubectl", "args": {"command": "get deployments -n shop"}}]}
"""An observation: a diagnosis is accepted only after one."""

GOOD = [
    {
        "content": "Looking at the workloads.",
        "tool_calls": [{"name": "kubectl", "args": {"command": "get deployments -n shop"}}],
    },
    {"tool_calls": [{"name": "topology", "args": {}}]},
    {"tool_calls": [{"name": "kubectl", "args": {"command": "scale deployment/cart --replicas=1"}}]},
    {"content": json.dumps(DIAGNOSIS)},
    {
        "content": "Scaling cart back up.",
        "tool_calls": [
            {"name": "kubectl", "args": {"command": "scale deployment/cart --replicas=1 -n shop"}}
        ],
    },
    {"content": "Scaled shop/Deployment/cart from 0 to 1 replica; alerts cleared."},
]


def _task(env, kind: str = "diagnosis+mitigation") -> Task:  # type: ignore[no-untyped-def]
    return Task(goal="Diagnose and mitigate the incident in namespace shop.", kind=kind, endpoints=env.endpoints,
                workdir=str(env.workdir), namespaces=["shop"])  # fmt: skip


def _script(tmp_path: Path, turns: list[dict]) -> str:
    f = tmp_path / "script.yaml"
    f.write_text(yaml.safe_dump(turns))
    return str(f)


def _replicas(env) -> int:  # type: ignore[no-untyped-def]
    from itbench_agents.k8s.kinds import GroupResource

    return int(env.twin.get(GroupResource("apps", "deployments"), "shop", "cart")["spec"]["replicas"])


def test_scripted_episode_diagnoses_and_mitigates(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    events: list[dict] = []
    agent = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, GOOD)}"))
    out = agent.run(_task(shop), events.append)
    assert out.extra["termination"] == "completed", out
    assert out.diagnosis is not None and out.diagnosis.entities[0].name == "shop/Deployment/cart"
    assert out.mitigation_actions == ["kubectl scale deployment/cart --replicas=1 -n shop"]
    assert _replicas(shop) == 1
    assert out.extra["alerts_cleared"] is True
    assert out.steps == 6 and out.usage.model_calls == 6 and out.usage.tool_calls == 4
    # the mutation attempted during diagnosis was refused, as an observation
    obs = [e for e in events if e["type"] == "observation"]
    assert "refused during diagnosis" in obs[2]["content"]
    assert "shop/cart -> shop/Deployment/cart (0/0)" in obs[1]["content"]
    types = {e["type"] for e in events}
    assert {"model_call", "tool_call", "observation", "agent_message"} <= types
    assert out.diagnosis_time_s is not None


def test_diagnosis_only_task_does_not_mutate(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, GOOD)}"))
    out = agent.run(_task(shop, kind="diagnosis"), lambda e: None)
    assert out.diagnosis is not None and out.mitigation_actions == [] and _replicas(shop) == 0
    assert out.steps == 4


def test_bad_replies_are_bounded_format_errors(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    turns = [
        {"content": "I think it is the cart."},  # not JSON
        {"invalid_tool_calls": [{"name": "kubectl", "args": "{command: get pods"}]},  # broken tool call
        {"tool_calls": [{"name": "kubectll", "args": {}}]},  # unknown tool
        {"content": "still not json"},
        {"content": "never reached"},
    ]
    events: list[dict] = []
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, turns)}")).run(
        _task(shop), events.append
    )
    assert out.extra["termination"] == "format_errors"
    assert out.extra["format_errors"] == 4
    assert out.diagnosis is None and out.diagnosis_error
    assert out.steps == 4
    tool_errors = [e["content"] for e in events if e["type"] == "observation"]
    assert "not valid JSON" in tool_errors[0] and "unknown tool 'kubectll'" in tool_errors[1]


def test_invalid_schema_is_repaired_once(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    turns = [
        LOOK,
        {"content": '{"entities": [{"name": "cart", "contributing_factor": true}]}'},
        {"content": json.dumps(DIAGNOSIS)},
    ]
    events: list[dict] = []
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, turns)}")).run(
        _task(shop, "diagnosis"), events.append
    )
    assert out.extra["repairs"] == 1 and out.diagnosis is not None
    # the repair prompt shows the expected form with a real object of the cluster, the one meant
    repair = [e for e in events if e["type"] == "model_call"][-1]["prompt"]["new"]
    assert any('for example "shop/Deployment/cart"' in m["data"]["content"] for m in repair.values())
    turns[2] = {"content": '{"entities": [{"name": "still-bad"}]}'}
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, turns)}")).run(
        _task(shop, "diagnosis"), lambda e: None
    )
    assert out.diagnosis is None and "namespace/Kind/name" in (out.diagnosis_error or "")


def test_step_limit_ends_episode(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    turns = [{"tool_calls": [{"name": "alerts", "args": {}}]}] * 10
    task = _task(shop)
    task.limits.max_steps = 3
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, turns)}")).run(task, lambda e: None)
    assert out.extra["termination"] == "max_steps" and out.steps == 3


def test_reflection_when_alerts_do_not_clear(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    turns = [
        LOOK,
        {"content": json.dumps(DIAGNOSIS)},
        {"tool_calls": [{"name": "kubectl", "args": {"command": "label deployment/cart touched=yes"}}]},
        {"tool_calls": [{"name": "kubectl", "args": {"command": "annotate deployment/cart touched=again"}}]},
        {
            "tool_calls": [
                {"name": "kubectl", "args": {"command": "label deployment/cart touched=thrice --overwrite"}}
            ]
        },
        {"content": "giving up"},
    ]
    events: list[dict] = []
    out = make_agent(
        AgentConfig(model=f"scripted:{_script(tmp_path, turns)}", options={"max_reflections": 2})
    ).run(_task(shop), events.append)
    assert out.extra["reflections"] == 2
    assert out.extra["termination"] == "reflections_exhausted"
    assert out.extra["alerts_cleared"] is False
    assert len(out.mitigation_actions) == 3


def test_openai_protocol_server_path_and_record_replay(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    turns = load_script(Path(_script(tmp_path, GOOD)))
    rec = tmp_path / "rec"
    with OpenAITestServer(turns) as srv:
        cfg = AgentConfig(model="openai/test-model", base_url=srv.url, record_dir=str(rec))
        preflight(cfg)
        out = make_agent(cfg).run(_task(shop), lambda e: None)
        assert out.extra["termination"] == "completed" and _replicas(shop) == 1
        assert out.usage.input_tokens > 0
        first = srv.requests[0]
        assert {t["function"]["name"] for t in first["tools"]} >= {"kubectl", "promql", "alerts", "topology"}
        assert (
            first["messages"][0]["role"] == "system"
            and "Site Reliability Engineer" in first["messages"][0]["content"]
        )
        # tool results travel back as role=tool messages with the call ids
        assert any(m["role"] == "tool" for m in srv.requests[1]["messages"])
    assert len(list((rec / "agent").glob("*.json"))) == 6

    # replay: same outcome with the server gone (restore the fault first)
    shop.twin.apply([broken_shop()[5]])
    assert _replicas(shop) == 0
    cfg = AgentConfig(model="openai/test-model", base_url="http://127.0.0.1:9/v1", replay_dir=str(rec))
    preflight(cfg)  # replay needs no server and no key
    out2 = make_agent(cfg).run(_task(shop), lambda e: None)
    assert (
        out2.extra["termination"] == "completed" and out2.diagnosis == out.diagnosis and _replicas(shop) == 1
    )


def test_nl2_mode_uses_tool_model(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = {
        "agent": [
            {"tool_calls": [{"name": "nl2kubectl", "args": {"request": "list deployments"}}]},
            {"content": json.dumps(DIAGNOSIS)},
        ],
        "tools": ["```bash\nkubectl get deployments -n shop\n```"],
    }
    f = tmp_path / "nl2.yaml"
    f.write_text(yaml.safe_dump(script))
    events: list[dict] = []
    out = make_agent(AgentConfig(model=f"scripted:{f}", tools="nl2")).run(
        _task(shop, "diagnosis"), events.append
    )
    assert out.diagnosis is not None
    obs = [e for e in events if e["type"] == "observation"][0]
    assert obs["tool"] == "nl2kubectl" and obs["content"].startswith(
        "kubectl query: kubectl get deployments -n shop"
    )
    assert "cart" in obs["content"]
    assert [e["role"] for e in events if e["type"] == "model_call"] == ["agent", "tools", "agent"]
    assert out.usage.model_calls == 3


def test_preflight_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="needs --model"):
        preflight(AgentConfig())
    with pytest.raises(ModelConfigError, match="not a litellm model string"):
        preflight(AgentConfig(model="gpt-4o"))
    with pytest.raises(ModelConfigError, match="does not exist"):
        preflight(AgentConfig(model=f"scripted:{tmp_path / 'x.yaml'}"))


def test_graph_runs_from_plain_context_like_studio(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """LangGraph Studio passes only plain context fields; the graph builds its own services."""
    from itbench_agents.agents.sre_react.context import Context
    from itbench_agents.agents.sre_react.studio import graph

    eps = tmp_path / "endpoints.json"
    shop.endpoints.write(eps)
    ctx = Context(model=f"scripted:{_script(tmp_path, GOOD)}", endpoints_file=str(eps), namespaces=["shop"])
    final = graph.invoke({"goal": "diagnose", "kind": "diagnosis"}, context=ctx)
    assert final["termination"] == "completed"
    assert final["diagnosis"]["entities"][0]["name"] == "shop/Deployment/cart"
    with pytest.raises(ValueError, match="endpoints_file"):
        graph.invoke({"goal": "x"}, context=Context(model="scripted:x", endpoints_file=None))


def test_spent_wall_time_stops_model_calls(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task = _task(shop)
    task.limits.wall_time_s = 0.0  # already spent when the first model call would start
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, GOOD)}")).run(task, lambda e: None)
    assert out.extra["termination"] == "wall_time" and out.steps == 0 and out.usage.model_calls == 0


def test_the_prompt_and_the_tools_agree_on_how_the_answer_is_returned() -> None:
    """Issue 27: the goal says to write agent_output.json, a file sre-react has no tool for, while
    its prompt asks for a JSON reply; the prompt now says the reply is the delivery."""
    from itbench_agents.llm.prompts import render
    from itbench_agents.personas.sre.twin_extension import SreTwinExtension

    text = render(
        "sre_react/diagnosis.md.j2",
        goal=SreTwinExtension().goal(["otel-demo"]),
        namespaces=["otel-demo"],
        alerts="[]",
    )
    assert "agent_output.json in your work folder" in text  # the goal, as every agent gets it
    assert "you have no file tool and need none" in text and "reply WITHOUT a tool call" in text
    from itbench_agents.tools.toolsets import toolset

    for mode in ("direct", "nl2"):  # what "no file tool" rests on
        names = {t.name for t in toolset(mode)}  # type: ignore[arg-type]
        assert not {n for n in names if "file" in n or "write" in n}, names


def test_the_trajectory_keeps_every_prompt_whole_and_each_message_once(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 27: model_call events kept {"messages": n, "last": 1000 chars}; nobody could see what
    the model saw. Now every call's full prompt (system prompt, history, tool schemas) can be
    rebuilt from the trajectory, and each message is stored once."""
    from langchain_core.messages import SystemMessage, message_to_dict

    from itbench_agents.llm.exchange import prompts_of

    events: list[dict] = []
    agent = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, GOOD)}"))
    out = agent.run(_task(shop), events.append)
    assert out.extra["termination"] == "completed", out
    calls = prompts_of(json.loads(json.dumps(events)), role="agent")  # as read back from disk
    assert len(calls) == len(GOOD)
    first = calls[0]["messages"]
    assert isinstance(first[0], SystemMessage) and "namespace shop" in str(first[0].content)
    assert {t["function"]["name"] for t in calls[0]["tools"]} >= {"kubectl", "topology"}
    # the second call re-sends the first's history: rebuilt whole, stored once
    assert [m.content for m in calls[1]["messages"][: len(first)]] == [m.content for m in first]
    stored = sum(
        len(e["prompt"]["new"]) for e in events if e.get("type") == "model_call" and e.get("role") == "agent"
    )
    distinct = {json.dumps(message_to_dict(m), sort_keys=True) for c in calls for m in c["messages"]}
    assert stored == len(distinct) < sum(len(c["messages"]) for c in calls)
    assert calls[3]["response"]["content"] == json.dumps(DIAGNOSIS)  # whole, not cut at 4000 chars


def test_a_diagnosis_before_any_observation_is_sent_back(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The paper's agent investigates first: answering at once is a bounded format error, and an
    agent that never looks ends with no diagnosis."""
    turns = [{"content": json.dumps(DIAGNOSIS)}, LOOK, {"content": json.dumps(DIAGNOSIS)}]
    events: list[dict] = []
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, turns)}")).run(
        _task(shop, "diagnosis"), events.append
    )
    assert out.diagnosis is not None and out.extra["format_errors"] == 1 and out.steps == 3
    assert [e["where"] for e in events if e["type"] == "error"] == ["premature_diagnosis"]
    never = [{"content": json.dumps(DIAGNOSIS)}] * 5
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, never)}")).run(
        _task(shop, "diagnosis"), lambda e: None
    )
    assert out.diagnosis is None and out.extra["termination"] == "format_errors"
    assert "before any observation" in (out.diagnosis_error or "")
    # opting out (--agent-option observe_first=false) accepts it at once
    out = make_agent(
        AgentConfig(model=f"scripted:{_script(tmp_path, never)}", options={"observe_first": "false"})
    ).run(_task(shop, "diagnosis"), lambda e: None)
    assert out.diagnosis is not None and out.steps == 1


def test_no_incident_is_a_diagnosis_the_agent_can_give(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The goal says to report no contributing entities when nothing is wrong (the no-fault
    controls): the agent accepts that answer instead of asking for a root cause."""
    turns = [LOOK, {"content": '{"entities": [], "propagations": [], "alerts_explained": []}'}]
    out = make_agent(AgentConfig(model=f"scripted:{_script(tmp_path, turns)}")).run(
        _task(shop, "diagnosis"), lambda e: None
    )
    assert out.diagnosis is not None and out.diagnosis.entities == [] and out.extra["repairs"] == 0


TEXT_CALLS = [
    # a small local model behind a server without a tool-call parser: the call is in the text
    {
        "content": 'I will check.\n```json\n{"name": "kubectl", "arguments": {"command": "get deployments -n shop"}}\n```'
    },
    {"content": '<tool_call>\n{"name": "topology", "arguments": "{}"}\n</tool_call>'},
    {"content": json.dumps(DIAGNOSIS)},
]


def test_tool_calls_written_as_text_are_read_only_when_asked(shop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    events: list[dict] = []
    with OpenAITestServer(load_script(Path(_script(tmp_path, TEXT_CALLS)))) as srv:
        cfg = AgentConfig(
            model="openai/local",
            base_url=srv.url,
            options={"text_tool_calls": "true", "max_format_errors": 0},
        )
        out = make_agent(cfg).run(_task(shop, "diagnosis"), events.append)
    assert out.diagnosis is not None and out.extra["format_errors"] == 0 and out.usage.tool_calls == 2
    warnings = [e for e in events if e["type"] == "warning" and e["where"] == "text_tool_call"]
    assert [w["step"] for w in warnings] == [1, 2] and "(kubectl)" in warnings[0]["message"]
    assert any(e["type"] == "observation" and "cart" in str(e.get("content")) for e in events)
    # off by default: the first reply is text, so a premature diagnosis attempt, then not JSON...
    with OpenAITestServer(load_script(Path(_script(tmp_path, TEXT_CALLS)))) as srv:
        cfg = AgentConfig(model="openai/local", base_url=srv.url, options={"max_format_errors": 0})
        out = make_agent(cfg).run(_task(shop, "diagnosis"), lambda e: None)
    assert out.diagnosis is None and out.usage.tool_calls == 0
