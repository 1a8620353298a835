"""The k8s layer: one answer to "does this selector select these labels" and "is this pod ready"
(issue 30, step 1). That it imports nothing above it is an import-linter contract
(tests/core/test_core_layers.py)."""

from __future__ import annotations

import pytest

from itbench_agents.k8s.readiness import is_ready, serving
from itbench_agents.k8s.selectors import match_expression, matches, matches_map, node_selector_term_matches

LABELS = {"app": "web", "tier": "front", "zone": "3"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, False),  # LabelSelectorAsSelector(nil): nothing
        ({}, True),  # empty: everything
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "db"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Sideways", "values": ["front"]}]}, False),
    ],
)
def test_a_label_selector(selector, expected) -> None:  # type: ignore[no-untyped-def]
    assert matches(selector, LABELS) is expected


def test_a_map_selector_selects_nothing_when_empty() -> None:
    assert matches_map({"app": "web"}, LABELS)
    assert not matches_map({}, LABELS) and not matches_map(None, LABELS)
    assert not matches_map({"app": "web"}, None)


def test_node_selectors_compare_numbers_and_need_a_requirement() -> None:
    assert match_expression(LABELS, {"key": "zone", "operator": "Gt", "values": ["2"]})
    assert not match_expression(LABELS, {"key": "zone", "operator": "Lt", "values": ["2"]})
    assert not match_expression(LABELS, {"key": "zone", "operator": "Gt", "values": ["two"]})
    node = {"metadata": {"name": "n1", "labels": LABELS}}
    assert node_selector_term_matches(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, node
    )
    assert not node_selector_term_matches({}, node)


def test_ready_and_serving_differ_on_a_terminating_pod() -> None:
    pod = {"metadata": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert is_ready(pod) and serving(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert is_ready(pod) and not serving(pod)
    assert not is_ready({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
