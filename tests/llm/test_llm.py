"""The LLM layer: scripted model, the real OpenAI client path against a local OpenAI-protocol
server, retries / aborts, usage and cost, record / replay, preflight."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool

from itbench_agents.llm.client import LLMClient
from itbench_agents.llm.models import ModelConfigError, ModelSettings, parse_model
from itbench_agents.llm.preflight import preflight_model
from itbench_agents.llm.retry import LLMAbort, call_with_retries, classify
from itbench_agents.llm.scripted import ScriptedTurn, load_script
from itbench_agents.llm.testing_server import OpenAITestServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

SCRIPT = """
- content: "checking alerts"
  tool_calls:
    - {name: alerts, args: {state: firing}}
- content: '{"entities": []}'
"""


def _alerts_tool() -> StructuredTool:
    def alerts(state: str = "firing") -> str:
        """List alerts."""
        return "no alerts"

    return StructuredTool.from_function(alerts)


def test_parse_model() -> None:
    assert parse_model("openai/gpt-4o") == ("openai", "gpt-4o")
    assert parse_model("hosted_vllm/meta/llama-3") == ("hosted_vllm", "meta/llama-3")
    assert parse_model("scripted:x.yaml") == ("scripted", "x.yaml")
    with pytest.raises(ModelConfigError, match="provider/model"):
        parse_model("gpt-4o")
    assert ModelSettings("openai/x").backend == "openai"
    assert ModelSettings("ollama/llama3").backend == "litellm"
    assert ModelSettings("ollama/llama3", base_url="http://h/v1").backend == "openai"


def test_scripted_model_plays_turns(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(SCRIPT)
    events: list[dict] = []
    client = LLMClient.create(ModelSettings(f"scripted:{f}"), events=events.append)
    m1 = client.invoke([HumanMessage("hi")], tools=[_alerts_tool()])
    assert m1.tool_calls[0]["name"] == "alerts" and m1.tool_calls[0]["args"] == {"state": "firing"}
    m2 = client.invoke([HumanMessage("hi")])
    assert m2.content == '{"entities": []}'
    assert client.invoke([HumanMessage("more")]).content == "(script exhausted)"
    assert [e["type"] for e in events] == ["model_call"] * 3
    assert events[0]["input_tokens"] > 0 and events[0]["cost_usd"] == 0.0


def test_script_errors_name_file_and_turn(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("- content: x\n  tool_calls: [{args: {}}]\n")
    with pytest.raises(ModelConfigError, match=r"bad.yaml: turn 0: .*name"):
        load_script(f)
    with pytest.raises(ModelConfigError, match="does not exist"):
        load_script(tmp_path / "missing.yaml")
    f.write_text("agent: []\n")
    with pytest.raises(ModelConfigError, match="no turns for role 'tools'"):
        load_script(f, role="tools")


def test_openai_client_path_with_tool_calls_and_usage() -> None:
    turns = [
        ScriptedTurn.model_validate(
            {"content": "", "tool_calls": [{"name": "alerts", "args": {"state": "all"}}]}
        ),
        ScriptedTurn(content="done"),
    ]
    events: list[dict] = []
    with OpenAITestServer(turns, failures=[429, 503]) as srv:
        settings = ModelSettings(
            "openai/gpt-4o", base_url=srv.url, api_key_env="ITBENCH_TEST_KEY", max_retries=3
        )
        os.environ["ITBENCH_TEST_KEY"] = "sk-test"
        client = LLMClient.create(settings, events=events.append)
        client_sleep: list[float] = []
        client.sleep = client_sleep.append  # type: ignore[assignment]
        msg = client.invoke([SystemMessage("sys"), HumanMessage("go")], tools=[_alerts_tool()])
        assert msg.tool_calls[0]["name"] == "alerts" and msg.tool_calls[0]["args"] == {"state": "all"}
        sent = srv.requests[-1]
        assert sent["model"] == "gpt-4o"
        assert sent["temperature"] == 0.0 and sent["top_p"] == 1e-7 and sent["seed"] == 42
        assert sent["tools"][0]["function"]["name"] == "alerts"
        assert len(client_sleep) == 2  # one backoff per injected failure
        call = [e for e in events if e["type"] == "model_call"][0]
        assert call["retries"] == 2 and call["input_tokens"] > 0 and call["output_tokens"] > 0
        # gpt-4o is in litellm's (local) price map: cost is recorded
        assert call["cost_usd"] > 0
        assert client.complete("sys", [{"role": "user", "content": "x"}]) == "done"


def test_auth_error_aborts_without_retry() -> None:
    with OpenAITestServer([ScriptedTurn(content="x")], api_key="right") as srv:
        os.environ["ITBENCH_WRONG_KEY"] = "wrong"
        client = LLMClient.create(
            ModelSettings("openai/m", base_url=srv.url, api_key_env="ITBENCH_WRONG_KEY")
        )
        with pytest.raises(LLMAbort) as info:
            client.invoke([HumanMessage("x")])
        assert info.value.reason == "auth_error"
        assert srv.requests == []  # rejected once at the door, not retried into the script


def test_retry_classifier() -> None:
    class E(Exception):
        def __init__(self, status: int, msg: str = "") -> None:
            super().__init__(msg)
            self.status_code = status

    assert classify(E(429)).kind == "rate_limit"
    assert classify(E(502)).retry
    assert classify(E(401)).reason == "auth_error"
    assert (
        classify(E(400, "This model's maximum context length is 8192 tokens")).reason
        == "context_window_exceeded"
    )
    calls = []

    def flaky() -> str:
        calls.append(1)
        raise E(500)

    with pytest.raises(LLMAbort, match="retries_exhausted"):
        call_with_retries(flaky, max_retries=2, sleep=lambda s: None)
    assert len(calls) == 3


def test_record_then_replay_without_network(tmp_path: Path) -> None:
    turns = [
        ScriptedTurn.model_validate({"tool_calls": [{"name": "alerts", "args": {}}]}),
        ScriptedTurn(content="final"),
    ]
    with OpenAITestServer(turns) as srv:
        rec = LLMClient.create(ModelSettings("openai/m", base_url=srv.url), record_dir=str(tmp_path / "rec"))
        a = rec.invoke([HumanMessage("q1")], tools=[_alerts_tool()])
        b = rec.invoke([HumanMessage("q2")])
    assert sorted(p.name for p in (tmp_path / "rec" / "agent").iterdir()) == ["0000.json", "0001.json"]
    events: list[dict] = []
    rep = LLMClient.create(
        ModelSettings("openai/m", base_url="http://127.0.0.1:9/v1"),
        events=events.append,
        replay_dir=str(tmp_path / "rec"),
    )
    assert rep.chat_model is None  # nothing to call
    a2 = rep.invoke([HumanMessage("q1")], tools=[_alerts_tool()])
    b2 = rep.invoke([HumanMessage("changed")])
    assert a2.tool_calls[0]["name"] == a.tool_calls[0]["name"] and b2.content == b.content == "final"
    assert "replay_mismatch" not in events[0] and events[1]["replay_mismatch"] is True
    with pytest.raises(LLMAbort, match="replay_exhausted"):
        rep.invoke([HumanMessage("q3")])


def test_preflight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelConfigError, match="unknown model provider 'opnai'.*openai"):
        preflight_model(ModelSettings("opnai/gpt-4o"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        preflight_model(ModelSettings("openai/gpt-4o"))
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="NOPE_KEY"):
        preflight_model(ModelSettings("openai/x", api_key_env="NOPE_KEY"))
    with pytest.raises(ModelConfigError, match="cannot connect"):
        preflight_model(ModelSettings("openai/x", base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ModelConfigError, match="does not exist"):
        preflight_model(ModelSettings(f"scripted:{tmp_path / 'none.yaml'}"))
    with OpenAITestServer([]) as srv:
        preflight_model(ModelSettings("openai/x", base_url=srv.url))  # reachable: fine


def test_litellm_bridge_for_other_providers() -> None:
    """Non-OpenAI providers go through langchain-litellm's ChatLiteLLM; hosted_vllm speaks the
    OpenAI protocol, so the same local server answers it (api_base set as a user would)."""
    from langchain_litellm import ChatLiteLLM

    from itbench_agents.llm.models import make_chat_model

    turns = [ScriptedTurn.model_validate({"tool_calls": [{"name": "alerts", "args": {"state": "pending"}}]})]
    with OpenAITestServer(turns) as srv:
        model = make_chat_model(ModelSettings("hosted_vllm/test-model"))
        assert isinstance(model, ChatLiteLLM)
        model.api_base = srv.url
        client = LLMClient(ModelSettings("hosted_vllm/test-model"), model)
        msg = client.invoke([HumanMessage("x")], tools=[_alerts_tool()])
        assert msg.tool_calls[0]["args"] == {"state": "pending"}
        sent = srv.requests[0]
        assert sent["model"] == "test-model" and sent["seed"] == 42 and sent["temperature"] == 0.0
        assert client.input_tokens > 0


def test_the_test_server_starts_the_script_over_when_asked() -> None:
    from itbench_agents.llm.scripted import ScriptedTurn
    from itbench_agents.llm.testing_server import OpenAITestServer

    body = {"model": "test", "messages": [{"role": "user", "content": "hi"}]}
    turns = [ScriptedTurn(content="one"), ScriptedTurn(content="two")]
    with OpenAITestServer(turns) as once, OpenAITestServer(turns, repeat=True) as again:
        said = [once.answer(body)[1]["choices"][0]["message"]["content"] for _ in range(3)]
        assert said == ["one", "two", "(script exhausted)"]
        said = [again.answer(body)[1]["choices"][0]["message"]["content"] for _ in range(3)]
        assert said == ["one", "two", "one"]
