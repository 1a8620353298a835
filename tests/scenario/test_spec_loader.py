"""Scenario spec, loader errors (file, line, field), registry selection, complexity, the library."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from itbench_agents.scenario.complexity import bucket_for, complexity_score
from itbench_agents.scenario.loader import ScenarioLoadError, load_scenario, parse_scenario
from itbench_agents.scenario.registry import ScenarioRegistry, ScenarioSelectionError, UnknownScenarioError
from itbench_agents.scenario.spec import FlagOp, PatchOp

GOOD = """\
id: sre/demo-fault-v1
name: demo
description: a demo
app: chain
namespace: chain
faults:
  - op: patch
    target: {apiVersion: apps/v1, kind: Deployment, name: b, namespace: chain}
    patch: {spec: {replicas: 0}}
    type: merge
mitigation:
  - op: patch
    target: {apiVersion: apps/v1, kind: Deployment, name: b, namespace: chain}
    patch: {spec: {replicas: 1}}
    type: merge
alerts:
  - name: HighRequestErrorRate
    labels: {service_name: a}
ground_truth:
  groups:
    - {id: b-deployment, kind: Deployment, namespace: chain, name: b, root_cause: true}
    - {id: a-service, kind: Service, namespace: chain, name: a}
  fault:
    - entity: {name: b, kind: Deployment, group_id: b-deployment}
      condition: scaled to zero
      category: Resource Unavailable
  propagations:
    - {source: b-deployment, target: a-service, condition: no endpoints, effect: errors}
technologies: [go]
"""


def test_good_scenario_parses() -> None:
    s = parse_scenario(GOOD, "good.yaml")
    assert isinstance(s.faults[0], PatchOp) and s.faults[0].type == "merge"
    assert s.propagation_length == 2 and s.steps == 1
    assert s.complexity == pytest.approx(2 ** (1 / 3))
    assert s.complexity_bucket == "easy" and s.category == "Resource Unavailable"


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "msg"),
    [
        (
            "    target: {apiVersion: apps/v1, kind: Deployment, name: b, namespace: chain}\n    patch: {spec: {replicas: 0}}",
            "    target: {apiVersion: apps/v1, kind: Deployment, namespace: chain}\n    patch: {spec: {replicas: 0}}",
            8,
            "faults[0].patch.target.name",
            "Field required",
        ),
        (
            "  - op: patch\n    target: {apiVersion: apps/v1, kind: Deployment, name: b, namespace: chain}\n    patch: {spec: {replicas: 0}}",
            "  - op: explode\n    target: {apiVersion: apps/v1, kind: Deployment, name: b, namespace: chain}\n    patch: {spec: {replicas: 0}}",
            7,
            "faults[0]",
            "unknown op 'explode'",
        ),
        ("technologies: [go]", "technologies: [go]\ncolour: blue", 30, "colour", "unknown field"),
        ("id: sre/demo-fault-v1", "id: sre/Demo Fault", 1, "id", "id must look like"),
        (
            "    - {id: a-service, kind: Service, namespace: chain, name: a}",
            "    - {id: a-service, kind: Service, namespace: chain}",
            22,
            "ground_truth.groups[1]",
            "a name or a filter",
        ),
        (
            "      category: Resource Unavailable",
            "      category: Cosmic Rays",
            26,
            "ground_truth.fault[0].category",
            "Input should be",
        ),
    ],
)
def test_loader_errors_name_file_line_and_field(old: str, new: str, line: int, field: str, msg: str) -> None:
    assert old in GOOD
    with pytest.raises(ScenarioLoadError) as ei:
        parse_scenario(GOOD.replace(old, new), "bad.yaml")
    text = str(ei.value)
    assert f"bad.yaml:{line}: {field}" in text, text
    assert msg in text


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "broken.yaml"
    p.write_text("id: sre/x-v1\nname: [unclosed\n")
    with pytest.raises(ScenarioLoadError) as ei:
        load_scenario(p)
    assert str(p) in str(ei.value) and "not valid YAML" in str(ei.value)


def test_missing_file_and_non_mapping() -> None:
    with pytest.raises(ScenarioLoadError, match="cannot read"):
        load_scenario("/nonexistent/x.yaml")
    with pytest.raises(ScenarioLoadError, match="mapping"):
        parse_scenario("- a\n- b\n", "list.yaml")


def test_semantic_checks() -> None:
    with pytest.raises(ScenarioLoadError, match="unknown group 'nope'"):
        parse_scenario(GOOD.replace("target: a-service, condition", "target: nope, condition"), "x.yaml")
    with pytest.raises(ScenarioLoadError, match="root_cause"):
        parse_scenario(GOOD.replace(", root_cause: true", ""), "x.yaml")
    with pytest.raises(ScenarioLoadError, match="json patch is a list"):
        parse_scenario(GOOD.replace("type: merge", "type: json", 1), "x.yaml")


def test_registry_lookup_suggestions_globs_and_suites(tmp_path: Path) -> None:
    (tmp_path / "sre").mkdir()
    (tmp_path / "sre" / "a.yaml").write_text(GOOD)
    (tmp_path / "sre" / "b.yaml").write_text(
        GOOD.replace("sre/demo-fault-v1", "sre/other-fault-v1").replace(
            "technologies: [go]", "technologies: [go]\ntags: [k8s]"
        )
    )
    reg = ScenarioRegistry.from_dir(tmp_path)
    assert reg.get("demo-fault-v1").id == "sre/demo-fault-v1"
    with pytest.raises(UnknownScenarioError) as ei:
        reg.get("sre/demo-falt-v1")
    assert "did you mean sre/demo-fault-v1" in str(ei.value)
    assert [s.id for s in reg.select(ids=["sre/*-fault-v1"])] == ["sre/demo-fault-v1", "sre/other-fault-v1"]
    assert [s.id for s in reg.select(suite="sre:k8s")] == ["sre/other-fault-v1"]
    assert [s.id for s in reg.select(suite="sre", tags=["k8s"])] == ["sre/other-fault-v1"]
    with pytest.raises(UnknownScenarioError):
        reg.select(ids=["sre/zzz-*"])
    # --scenario narrows --suite (issue 27: it was a silent union that ran the whole suite)
    assert [s.id for s in reg.select(ids=["sre/other-fault-v1"], suite="sre")] == ["sre/other-fault-v1"]
    assert [s.id for s in reg.select(ids=["sre/*-fault-v1"], suite="sre:k8s")] == ["sre/other-fault-v1"]
    with pytest.raises(ScenarioSelectionError, match="'sre/demo-fault-v1' not in suite 'sre:k8s'"):
        reg.select(ids=["sre/demo-fault-v1"], suite="sre:k8s")
    with pytest.raises(ScenarioSelectionError, match="no scenario of suite 'sre:k8s' matches sre/demo-\\*"):
        reg.select(ids=["sre/demo-*"], suite="sre:k8s")
    (tmp_path / "sre" / "c.yaml").write_text(GOOD)
    with pytest.raises(ScenarioLoadError, match="duplicate id"):
        ScenarioRegistry.from_dir(tmp_path)


def test_complexity_eq6_and_buckets() -> None:
    assert complexity_score(3, 2, 2) == pytest.approx(12 ** (1 / 3))
    # Table 12 of the paper: (propagation, steps, technologies) -> our bucket
    table12 = [
        (3, 2, 1),
        (3, 2, 2),
        (4, 3, 2),
        (3, 2, 2),
        (8, 6, 3),
        (8, 6, 3),
        (7, 5, 3),
        (2, 1, 2),
        (4, 1, 3),
        (2, 2, 2),
        (4, 1, 4),
        (3, 1, 2),
        (2, 1, 1),
        (2, 2, 2),
        (3, 1, 2),
        (3, 2, 3),
        (4, 1, 5),
        (3, 1, 2),
        (1, 1, 2),
        (2, 1, 3),
        (1, 2, 2),
    ]
    counts = Counter(bucket_for(complexity_score(*t)) for t in table12)
    assert counts == {"easy": 4, "medium": 12, "hard": 5}
    assert math.isclose(complexity_score(0, 0, 0), 1.0)


# ---------------------------------------------------------------- the shipped library
@pytest.fixture(scope="module")
def library() -> ScenarioRegistry:
    return ScenarioRegistry.default()


def test_library_size_and_controls(library: ScenarioRegistry) -> None:
    faults = [s for s in library.all() if not s.control]
    controls = [s for s in library.all() if s.control]
    assert len(faults) >= 40 and len(controls) >= 3
    assert {s.app for s in faults} == {"otel-demo", "hotel-reservation"}
    for s in controls:
        assert not s.alerts and not s.ground_truth.root_causes() and s.complexity_bucket == "control"


def test_library_covers_the_fault_types(library: ScenarioRegistry) -> None:
    flags = {op.name for s in library.all() for op in s.faults if isinstance(op, FlagOp)}
    assert {
        "adFailure",
        "adHighCpu",
        "adManualGc",
        "cartFailure",
        "paymentFailure",
        "paymentUnreachable",
        "productCatalogFailure",
        "recommendationCacheFailure",
        "kafkaQueueProblems",
        # imageSlowLoad is left out: it only delays browser traffic, which ITBench (and the twin) keep off
        "loadGeneratorFloodHomepage",
        "emailMemoryLeak",
    } <= flags
    chaos = {
        op.object["spec"]["type"] if op.object["kind"] == "Schedule" else op.object["kind"]
        for s in library.all()
        for op in s.faults
        if op.op == "create" and "chaos-mesh" in op.object["apiVersion"]
    }  # a Schedule counts as the experiment kind it creates
    assert chaos == {"NetworkChaos", "HTTPChaos", "StressChaos", "PodChaos", "JVMChaos"}
    assert any(
        op.op == "create" and op.object["kind"] == "Schedule" for s in library.all() for op in s.faults
    ), "ITBench's scheduled-chaos-mesh-experiment faults create Schedules"
    tags = Counter(t for s in library.all() for t in s.tags)
    assert (
        tags["multi-fault"] >= 4
        and tags["flagd"] >= 12
        and tags["chaos-mesh"] >= 10
        and tags["kubernetes"] >= 20
    )
    itb = {s.metadata.itbench_number for s in library.all() if s.metadata.itbench_number}
    assert len(itb) >= 35


def test_library_is_consistent(library: ScenarioRegistry) -> None:
    from itbench_agents.personas.sre.validate import convention_problems

    for s in library.all():
        assert convention_problems(s, library.files[s.id]) == [], s.id  # what `scenarios validate` checks
        assert s.namespace in {"otel-demo", "hotel-reservation"}
        for a in s.alerts:
            assert a.window_s > 0


def test_the_library_conventions_name_what_is_wrong(library: ScenarioRegistry) -> None:
    from itbench_agents.personas.sre.validate import convention_problems

    s = library.get("sre/ad-scaled-to-zero-v1")
    bare = s.model_copy(update={"solutions": [], "technologies": []})
    problems = convention_problems(bare, Path("ad-zero.yaml"))
    assert len(problems) == 3
    assert problems[0].startswith("file ad-zero.yaml: a scenario with id sre/ad-scaled-to-zero-v1 lives in")
    # a chain that does not start at the root cause: the Schedule's hop to valkey-cart left out
    s = library.get("sre/valkey-cart-memory-stress-v1")
    gt = s.ground_truth.model_copy(update={"propagations": s.ground_truth.propagations[1:]})
    [broken] = convention_problems(s.model_copy(update={"ground_truth": gt}))
    assert broken.startswith("ground_truth: reported as an agent would, it does not score perfectly")


def test_ground_truth_as_an_agent_would_report_it_scores_perfectly(library: ScenarioRegistry) -> None:
    from itbench_agents.agents.oracle import ground_truth_diagnosis
    from itbench_agents.evaluation.diagnosis import score_diagnosis

    for s in library.all():
        sc = score_diagnosis(s.ground_truth, ground_truth_diagnosis(s))
        assert sc.correct and sc.ntam_fl == 1.0 and sc.chain_f1 == 1.0, s.id
        assert sc.ntam_fpc == pytest.approx(1.0), s.id
