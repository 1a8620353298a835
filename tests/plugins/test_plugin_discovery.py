"""Plug-ins through entry points (issue 27): agents, tools and scenario folders from an installed
package, with their source, and clear reasons when one is broken. The "installed package" here is a
``.dist-info`` folder on ``sys.path``, which is all ``importlib.metadata`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_dist import install_fake

from itbench_agents.agents import registry as agents
from itbench_agents.scenario.loader import ScenarioLoadError
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.tools import registry as tools

EXAMPLE_SCENARIOS = Path(__file__).resolve().parents[2] / "examples/plugin/itbench_example_plugin/scenarios"


AGENT = '''
    from itbench_agents.agents.noop import make_agent as _noop


    def make_agent(config):
        """Does nothing, from a plug-in."""
        return _noop(config)


    make_agent.needs_model = True
'''


def test_a_plugin_agent_is_listed_with_its_source_and_runs(fresh: Path) -> None:
    install_fake(
        fresh,
        """
        [itbench_agents.agents]
        fake-noop = fakeplug_agent:make_agent
        noop = fakeplug_agent:make_agent
        broken = fakeplug_missing:make_agent
        """,
        {"fakeplug_agent": AGENT},
    )
    e = agents.entry("fake-noop")
    assert (e.source, e.description, e.needs_model) == (
        "plug-in: fake-plugin 0.1",
        "Does nothing, from a plug-in.",
        True,
    )
    assert agents.make_agent("fake-noop").name == "noop"
    assert agents.entry("noop").source == "built-in"  # a plug-in cannot take a built-in's name
    broken = agents.entry("broken")
    assert not agents.available("broken")
    assert "fakeplug_missing" in (broken.load_error or "") and "fake-plugin 0.1" in (broken.load_error or "")
    with pytest.raises(ImportError, match="from fake-plugin 0.1"):
        agents.make_agent("broken")

    from typer.testing import CliRunner

    from itbench_agents.cli import app

    res = CliRunner().invoke(app, ["agents", "list", "--json"])
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert rows["fake-noop"]["source"] == "plug-in: fake-plugin 0.1" and rows["fake-noop"]["available"]
    assert rows["broken"]["available"] is False and "does not load" in rows["broken"]["description"]
    res = CliRunner().invoke(app, ["run", "-s", "sre/ad-scaled-to-zero-v1", "--agent", "broken"])
    assert res.exit_code == 2 and "does not load: ModuleNotFoundError" in res.output


def test_plugin_tools_and_broken_ones(fresh: Path) -> None:
    install_fake(
        fresh,
        """
        [itbench_agents.tools]
        shout = fakeplug_tools:shout
        whisper = fakeplug_tools:shout
        notatool = fakeplug_tools:CONSTANT
        """,
        {
            "fakeplug_tools": '''
            from itbench_agents.tools.registry import tool

            CONSTANT = 3


            @tool(kind="read")
            def shout(ctx, text: str) -> str:
                """Say it louder.

                Args:
                    text: What to say.
                """
                return text.upper()
            '''
        },
    )
    from itbench_agents.core.endpoints import Endpoints
    from itbench_agents.tools.context import ToolContext

    ctx = ToolContext(endpoints=Endpoints(kubeconfig="kubeconfig", kube_url="http://127.0.0.1:1"))
    assert tools.get_tool("shout").invoke(ctx, {"text": "hi"}).output == "HI"
    assert tools.tool_source("shout") == "plug-in: fake-plugin 0.1"
    assert tools.tool_source("kubectl") == "built-in"
    broken = tools.broken_plugins()
    assert "registers a tool named 'shout': the names must agree" in broken["whisper"]
    assert "not a function decorated with @tool" in broken["notatool"]
    with pytest.raises(tools.UnknownToolError, match="the names must agree"):
        tools.get_tool("whisper")

    from typer.testing import CliRunner

    from itbench_agents.cli import app

    rows = {r["name"]: r for r in json.loads(CliRunner().invoke(app, ["tools", "list", "--json"]).output)}
    assert rows["shout"]["source"] == "plug-in: fake-plugin 0.1" and rows["shout"]["sets"] == []
    assert rows["kubectl"]["sets"] == ["direct"] and rows["wait"]["sets"] == ["direct", "nl2"]
    assert rows["notatool"]["source"] == "plug-in (broken)"


def test_plugin_scenario_folders(fresh: Path) -> None:
    install_fake(
        fresh,
        """
        [itbench_agents.scenarios]
        example = fakeplug_scen:folder
        """,
        {"fakeplug_scen": f"def folder():\n    return {str(EXAMPLE_SCENARIOS)!r}\n"},
    )
    reg = ScenarioRegistry.default()
    assert "sre/hotel-search-scaled-to-zero-v1" in reg and "sre/ad-scaled-to-zero-v1" in reg
    assert reg.files["sre/hotel-search-scaled-to-zero-v1"].is_relative_to(EXAMPLE_SCENARIOS)

    from itbench_agents.personas.sre.validate import validate_scenario

    sid = "sre/hotel-search-scaled-to-zero-v1"
    result = validate_scenario(reg.get(sid), file=reg.files[sid])  # the example stays a valid scenario
    assert result.ok, [str(c) for c in result.checks if not c.ok]


def test_a_broken_scenario_plugin_names_its_package(fresh: Path) -> None:
    install_fake(fresh, "[itbench_agents.scenarios]\nexample = fakeplug_nothing\n", {})
    with pytest.raises(
        ScenarioLoadError, match=r"fake-plugin 0.1: itbench_agents.scenarios: .*does not load"
    ):
        ScenarioRegistry.default()


def test_itbench_plugins_off_ignores_every_plugin(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(
        fresh,
        """
        [itbench_agents.agents]
        fake-noop = fakeplug_agent:make_agent

        [itbench_agents.scenarios]
        example = fakeplug_scen:folder
        """,
        {"fakeplug_agent": AGENT, "fakeplug_scen": f"def folder():\n    return {str(EXAMPLE_SCENARIOS)!r}\n"},
    )
    monkeypatch.setenv("ITBENCH_PLUGINS", "off")
    assert "fake-noop" not in {e.name for e in agents.entries()}
    assert "sre/hotel-search-scaled-to-zero-v1" not in ScenarioRegistry.default()
    monkeypatch.setenv("ITBENCH_PLUGINS", "on")
    assert "sre/hotel-search-scaled-to-zero-v1" in ScenarioRegistry.default()
