"""The opt-in reading of tool calls written as text: the shapes small local models write, and
nothing that is not a call of an offered tool."""

from __future__ import annotations

import json

import pytest

from itbench_agents.llm.text_tool_calls import tool_calls_in_text

OFFERED = {"kubectl", "promql", "topology"}
GET = {"command": "get pods -n shop"}


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"name": "kubectl", "arguments": {"command": "get pods -n shop"}}\n```',
        '<tool_call>\n{"name": "kubectl", "arguments": {"command": "get pods -n shop"}}\n</tool_call>',
        'Let me look. {"name": "kubectl", "parameters": {"command": "get pods -n shop"}} then I decide.',
        '{"tool": "kubectl", "args": {"command": "get pods -n shop"}}',
        '{"type": "function", "function": {"name": "kubectl", "arguments": "{\\"command\\": \\"get pods -n shop\\"}"}}',
        '{"tool_calls": [{"function": {"name": "kubectl", "arguments": {"command": "get pods -n shop"}}}]}',
        '[{"name": "kubectl", "arguments": {"command": "get pods -n shop"}}]',
    ],
)
def test_the_shapes_local_models_write(text: str) -> None:
    (call,) = tool_calls_in_text(text, OFFERED)
    assert call == {"name": "kubectl", "args": GET, "id": "text_call_0", "type": "tool_call"}


def test_several_calls_in_order_with_distinct_ids() -> None:
    text = '{"name": "topology", "arguments": {}}\n{"name": "kubectl", "arguments": {"command": "get pods -n shop"}}'
    calls = tool_calls_in_text(text, OFFERED)
    assert [(c["name"], c["id"]) for c in calls] == [("topology", "text_call_0"), ("kubectl", "text_call_1")]


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(
            {"entities": [{"name": "shop/Deployment/cart", "contributing_factor": True}]}
        ),  # a diagnosis
        '{"name": "rm_rf", "arguments": {}}',  # a tool nobody offered
        '{"name": "kubectl", "arguments": "not json"}',
        '{"name": "kubectl", "arguments": ["get", "pods"]}',
        '{"name": "kubectl", "arguments": {"command": "get pods"',  # cut off
        "I think the cart is down.",
        "",
    ],
)
def test_nothing_else_is_taken_for_a_call(text: str) -> None:
    assert tool_calls_in_text(text, OFFERED) == []
