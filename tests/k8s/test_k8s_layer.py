"""The k8s layer: one answer to "does this selector select these labels" and "is this pod ready"
(issue 30, step 1). That it imports nothing above it is an import-linter contract
(tests/core/test_core_layers.py)."""

from __future__ import annotations

import pytest

from itbench_agents.k8s.quantity import format_quantity, parse_quantity, quantity
from itbench_agents.k8s.readiness import is_ready, serving
from itbench_agents.k8s.selectors import match_expression, matches, matches_map, node_selector_term_matches
from itbench_agents.k8s.times import parse_rfc3339, rfc3339

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


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", 0.5), ("2", 2.0), ("256Mi", 256 * 2**20), ("1G", 1e9), ("1.5Gi", 1.5 * 2**30), ("100k", 1e5)],
)
def test_quantities_parse_as_the_api_server_reads_them(text: str, value: float) -> None:
    assert parse_quantity(text) == value


def test_quantities_print_in_the_api_servers_canonical_form() -> None:
    assert format_quantity(0.5) == "500m" and format_quantity(2.0) == "2"
    assert format_quantity(536870912.0) == "512Mi" and format_quantity(1e9) == "1G"
    assert format_quantity(parse_quantity("1536Mi"), like="1536Mi") == "1536Mi"


def test_a_malformed_quantity_raises_or_falls_back_to_the_default() -> None:
    with pytest.raises(ValueError):
        parse_quantity("lots")
    assert quantity("lots", 7.0) == 7.0 and quantity(None) is None and quantity("1Ki") == 1024


def test_timestamps_round_trip_at_second_precision() -> None:
    assert rfc3339(1767225600.9) == "2026-01-01T00:00:00Z"
    assert parse_rfc3339("2026-01-01T00:00:00Z") == 1767225600.0
    assert parse_rfc3339(rfc3339(1767225661)) == 1767225661
