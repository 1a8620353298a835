"""A scenario's other namespaces (``namespaces``) and what it deploys with the app (``setup``):
the team's dev namespace beside the app's, checked where they are declared."""

from __future__ import annotations

import pytest
from test_spec_loader import GOOD

from itbench_agents.harness.goal import in_namespaces
from itbench_agents.personas.finops.twin_extension import FinopsTwinExtension
from itbench_agents.personas.sre.twin_extension import SRE_GOAL, SreTwinExtension
from itbench_agents.scenario.loader import ScenarioLoadError, parse_scenario

DEV = """\
namespaces: [chain-dev]
setup:
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db, namespace: chain-dev}
    spec: {replicas: 1}
"""


def with_team(extra: str) -> str:
    return GOOD.replace("technologies: [go]\n", "technologies: [go]\n" + extra)


def test_the_team_namespaces_come_after_the_app_s_and_are_made_with_it() -> None:
    s = parse_scenario(with_team(DEV), "dev.yaml")
    assert s.task_namespaces == ["chain", "chain-dev"]
    made = s.setup_objects()
    assert [(o["kind"], o["metadata"]["name"]) for o in made] == [
        ("Namespace", "chain-dev"),
        ("StatefulSet", "db"),
    ]
    made[1]["spec"]["replicas"] = 5  # a copy: deploying it cannot change the scenario
    assert s.setup[0]["spec"]["replicas"] == 1
    plain = parse_scenario(GOOD, "plain.yaml")
    assert plain.task_namespaces == ["chain"] and plain.setup_objects() == []


@pytest.mark.parametrize(
    ("extra", "msg"),
    [
        ("namespaces: [Chain_Dev]\n", "'Chain_Dev' is not a valid namespace name"),
        ("namespaces: [chain]\n", "other than namespace 'chain'"),
        ("namespaces: [dev, dev]\n", "must be distinct"),
        (DEV.replace("namespace: chain-dev}", "namespace: elsewhere}"), "setup[0] (StatefulSet db)"),
        (
            DEV.replace("namespace: chain-dev}", "}"),
            "metadata.namespace must be one of ['chain', 'chain-dev']",
        ),
        (DEV.replace("kind: StatefulSet", "kind: Namespace"), "list the namespace in namespaces"),
        (DEV.replace("name: db, ", ""), "setup[0]: an object needs apiVersion, kind and metadata.name"),
    ],
)
def test_a_wrong_team_namespace_or_setup_object_is_named(extra: str, msg: str) -> None:
    with pytest.raises(ScenarioLoadError) as ei:
        parse_scenario(with_team(extra), "bad.yaml")
    assert msg in str(ei.value), str(ei.value)


def test_the_goal_names_every_namespace_and_one_reads_as_before() -> None:
    assert in_namespaces(["a"]) == "namespace a"
    assert in_namespaces(["a", "b"]) == "namespaces a and b"
    assert in_namespaces(["a", "b", "c"]) == "namespaces a, b and c"
    assert (
        SreTwinExtension()
        .goal(["otel-demo"])
        .startswith("You are an SRE on call for the application running in namespace otel-demo of this")
    )
    assert "{namespace}" in SRE_GOAL
    ext = FinopsTwinExtension()
    one = ext.goal(["otel-demo"])
    assert "running in namespace otel-demo of this" in one and "the namespace spends more" in one
    two = ext.goal(["otel-demo", "otel-demo-dev"])
    assert "running in namespaces otel-demo and otel-demo-dev of this" in two
    assert "a namespace spends more than it did last week" in two
