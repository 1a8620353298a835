"""The k8s layer: one answer to "does this selector select these labels" and "is this pod ready",
and nothing above it imported from below (issue 30, step 1)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from itbench_agents.k8s.readiness import is_ready, serving
from itbench_agents.k8s.selectors import match_expression, matches, matches_map, node_selector_term_matches

PACKAGE = Path(__file__).resolve().parents[2] / "itbench_agents"
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


def _imports(path: Path) -> list[str]:
    """Absolute names of the itbench_agents modules ``path`` imports."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    package = list(rel.parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                out.append(".".join([*base, *(node.module.split(".") if node.module else [])]))
            elif node.module:
                out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return [m for m in out if m == "itbench_agents" or m.startswith("itbench_agents.")]


def test_the_k8s_layer_imports_nothing_of_the_package() -> None:
    for path in sorted((PACKAGE / "k8s").glob("*.py")):
        assert [m for m in _imports(path) if not m.startswith("itbench_agents.k8s")] == [], path


def test_outside_the_twin_nobody_reaches_into_its_controllers() -> None:
    """Tools, agents and the evaluation used to import the twin's controllers for a selector."""
    offenders = [
        (str(path.relative_to(PACKAGE)), m)
        for path in sorted(PACKAGE.rglob("*.py"))
        if "twin" not in path.relative_to(PACKAGE).parts
        for m in _imports(path)
        if m.startswith("itbench_agents.twin.controllers")
    ]
    assert offenders == []
