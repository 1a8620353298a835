"""The same tools through LangChain, OpenAI function schemas and MCP (`itbench mcp serve`)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from itbench_agents.tools.adapters import to_langchain, to_openai_schema
from itbench_agents.tools.registry import ToolError, all_tools, make_spec, tool


def test_openai_schema_from_signature_and_docstring() -> None:
    schema = to_openai_schema(all_tools()["promql"])
    fn = schema["function"]
    assert fn["name"] == "promql"
    assert fn["description"].startswith("Run a PromQL query")
    params = fn["parameters"]
    assert params["required"] == ["query"]
    assert set(params["properties"]) == {"query", "range", "step"}
    assert "Look-back window" in params["properties"]["range"]["description"]
    assert params["additionalProperties"] is False


def test_tool_kinds() -> None:
    kinds = {n: s.kind for n, s in all_tools().items()}
    assert kinds["kubectl"] == "mutate" and kinds["nl2kubectl"] == "mutate"
    assert all(kinds[n] == "read" for n in ("promql", "logql", "traces", "alerts", "topology", "wait"))


def test_new_tool_is_one_function(ctx) -> None:  # type: ignore[no-untyped-def]
    def shout(ctx, text: str, times: int = 2) -> str:  # type: ignore[no-untyped-def]
        """Repeat text loudly.

        Args:
            text: What to say.
            times: How often.
        """
        if times > 5:
            raise ToolError("too loud")
        return " ".join([text.upper()] * times)

    spec = make_spec(shout, kind="read")
    assert spec.invoke(ctx, {"text": "hi"}).output == "HI HI"
    assert spec.invoke(ctx, {"text": "hi", "times": 9}).output == "Error: too loud"
    assert spec.invoke(ctx, {"times": "x"}).error
    assert spec.json_schema()["properties"]["times"]["description"] == "How often."


def test_registry_rejects_duplicate_names() -> None:
    import pytest

    def alerts(ctx) -> str:  # type: ignore[no-untyped-def]
        """Another alerts tool."""
        return ""

    with pytest.raises(ValueError, match="already registered"):
        tool(kind="read")(alerts)


def test_langchain_tool_runs_against_env(ctx, env) -> None:  # type: ignore[no-untyped-def]
    seen = []
    tools = to_langchain(
        [all_tools()["alerts"]], ctx, on_result=lambda s, a, r: seen.append((s.name, r.error))
    )
    env.obs.alerts = lambda: [{"labels": {"alertname": "A"}, "state": "firing"}]
    out = tools[0].invoke({"state": "firing"})
    assert out.startswith("1 alert(s):")
    assert seen == [("alerts", False)]
    assert tools[0].args_schema.model_json_schema()["properties"]["state"]["default"] == "firing"


@pytest.mark.slow
def test_mcp_serve_over_stdio(env) -> None:  # type: ignore[no-untyped-def]
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    eps_file = Path(env.workdir) / "endpoints.json"
    env.endpoints.write(eps_file)
    env.obs.alerts = lambda: [
        {"labels": {"alertname": "HighErrorRate", "service_name": "cart"}, "state": "firing"}
    ]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "itbench_agents.cli", "mcp", "serve", "--endpoints", str(eps_file), "-n", "shop"],
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )

    async def go() -> tuple[list[str], str, bool, str]:
        async with Client(params) as client:
            listed = await client.list_tools()
            res = await client.call_tool("alerts", {"state": "firing"})
            refused = await client.call_tool("kubectl", {"command": "delete deployment cart"})
            return (
                [t.name for t in listed.tools],
                res.content[0].text,
                bool(refused.is_error),
                refused.content[0].text,
            )

    names, text, is_error, refused_text = asyncio.run(asyncio.wait_for(go(), 120))
    assert {"kubectl", "promql", "logql", "traces", "alerts", "topology", "wait"} <= set(names)
    assert "FIRING HighErrorRate" in text
    assert is_error and "refused during diagnosis" in refused_text


def test_mcp_serve_bad_endpoints_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from itbench_agents.cli import app

    (tmp_path / "e.json").write_text('{"kube_url": 1}')
    res = CliRunner().invoke(
        app, ["mcp", "serve", "--endpoints", str(tmp_path / "e.json")], env={"COLUMNS": "400"}
    )
    assert res.exit_code == 2
    assert "not a valid endpoints file" in res.output and "kubeconfig" in res.output
    res = CliRunner().invoke(
        app, ["mcp", "serve", "--endpoints", str(tmp_path / "none.json")], env={"COLUMNS": "400"}
    )
    assert res.exit_code == 2 and "no such file" in res.output


def test_mcp_serve_nl2_needs_a_working_tool_model(tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from itbench_agents.cli import app

    eps = tmp_path / "eps.json"
    env.endpoints.write(eps)
    wide = {"COLUMNS": "400"}
    res = CliRunner().invoke(app, ["mcp", "serve", "--endpoints", str(eps), "--tools", "nl2"], env=wide)
    assert res.exit_code == 2 and "need --tool-model" in res.output
    args = ["mcp", "serve", "--endpoints", str(eps), "--tools", "nl2", "--tool-model", "nosuchprovider/x"]
    res = CliRunner().invoke(app, args, env=wide)
    assert res.exit_code == 2 and "unknown model provider 'nosuchprovider'" in res.output
