"""``--tools``: a base set plus or minus registered tools by name (issue 27)."""

from __future__ import annotations

import pytest

from itbench_agents.tools import registry
from itbench_agents.tools import spec as tool_spec
from itbench_agents.tools.toolsets import (
    DIRECT,
    NL2,
    ToolSelection,
    ToolSelectionError,
    check_tools,
    parse_tools,
    toolset,
)


def test_the_grammar() -> None:
    assert parse_tools("direct") == ToolSelection("direct")
    assert parse_tools("nl2") == ToolSelection("nl2")
    assert parse_tools("direct,+runbook") == ToolSelection("direct", ("runbook",))
    assert parse_tools("+runbook") == ToolSelection("direct", ("runbook",))  # starts from direct
    assert parse_tools(" nl2 , -wait ") == ToolSelection("nl2", (), ("wait",))
    assert parse_tools("nl2").mode == "nl2" and parse_tools("+x").mode == "direct"
    assert parse_tools("direct,-wait,+topology").names() == [n for n in DIRECT if n != "wait"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "expected direct or nl2"),
        ("dirct", "the base set 'dirct' is not direct or nl2"),
        ("all", "the base set 'all' is not direct or nl2"),  # only `mcp serve` takes both sets
        ("direct,runbook", "'runbook' is neither +NAME nor -NAME"),
        ("direct,+", "'+' is neither +NAME nor -NAME"),
    ],
)
def test_bad_selections_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ToolSelectionError, match=says.replace("+", r"\+")):
        parse_tools(text)


def test_check_tools_knows_the_registry() -> None:
    assert check_tools("direct,-wait").remove == ("wait",)
    with pytest.raises(ToolSelectionError, match="unknown tool 'promq'; did you mean promql"):
        check_tools("direct,+promq")
    assert parse_tools("all", ("direct", "nl2", "all")).names() == list(dict.fromkeys(DIRECT + NL2))


def test_a_registered_tool_joins_a_set_by_name_and_masking_still_applies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry.all_tools()
    monkeypatch.setattr(tool_spec, "_REGISTRY", dict(tool_spec._REGISTRY))

    @registry.tool(kind="read")
    def runbook(ctx, alert: str) -> str:  # type: ignore[no-untyped-def]
        """A runbook.

        Args:
            alert: The alert.
        """
        return alert

    names = [t.name for t in toolset("direct,+runbook", masked={"traces"})]
    assert names == [n for n in DIRECT if n != "traces"] + ["runbook"]
    assert registry.tool_source("runbook") == f"registered by {__name__}"
    assert registry.tool_source("kubectl") == "built-in"
    assert "runbook" not in [t.name for t in toolset("direct")]  # only when asked for
    assert [t.name for t in toolset("nl2,-wait,+runbook")][-1] == "runbook"
