"""How far one fixed answer gets (``evaluation/spread.py``), and the library held to the blind bar."""

from __future__ import annotations

from itbench_agents.core.output import Diagnosis, DiagnosisEntity, Propagation
from itbench_agents.evaluation.diagnosis import score_diagnosis
from itbench_agents.evaluation.spread import (
    best_fixed_answers,
    best_fixed_pairs,
    fixed_answer_hits,
    fixed_answers,
    fixed_pairs,
)
from itbench_agents.personas.sre.audit import BLIND_DIAGNOSIS_MAX
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.scenario.spec import Scenario


def _alone(entity: str) -> Diagnosis:
    return Diagnosis(entities=[DiagnosisEntity(name=entity, contributing_factor=True)])


def _named_entities(sc: Scenario) -> set[str]:
    return {
        f"{g.namespace or sc.namespace}/{g.kind}/{g.name}" + (f"#{g.key}" if g.key else "")
        for g in sc.ground_truth.groups
        if g.name
    }


def test_the_fixed_answers_are_exactly_the_single_answers_the_scorer_accepts() -> None:
    """On every scenario of the library, every entity its ground truth names: alone it is a
    correct diagnosis exactly when ``fixed_answers`` lists it (the static count is the scorer's)."""
    checked = 0
    for sc in ScenarioRegistry.default().all():
        answers = fixed_answers(sc)
        assert answers <= _named_entities(sc), sc.id
        for entity in _named_entities(sc):
            correct = score_diagnosis(sc.ground_truth, _alone(entity)).correct
            assert correct == (entity in answers), (sc.id, entity)
            checked += 1
    assert checked > 300  # the loop ran over the library (438 entities on 85 scenarios)


def test_several_root_causes_or_none_leave_no_fixed_answer() -> None:
    reg = ScenarioRegistry.default()
    two = reg.get("sre/valkey-cart-stress-and-delay-v1")  # two Schedules
    assert len(two.ground_truth.root_causes()) > 1 and fixed_answers(two) == set()
    assert fixed_answers(reg.get("sre/control-otel-demo-healthy-v1")) == set()
    one = fixed_answers(reg.get("sre/ad-scaled-to-zero-v1"))
    assert {"otel-demo/Deployment/ad", "otel-demo/Service/ad"} <= one


def test_no_fixed_answer_is_right_on_more_than_ten_percent_of_the_library() -> None:
    """An agent that gives each app's strongest fixed answer whatever happened (the audit's
    constant answer) is held to the blind strategies' bar. Adding a scenario whose root cause is
    already the most common one can break this: spread the library's root causes instead."""
    scenarios = ScenarioRegistry.default().all()
    faults = [s for s in scenarios if not s.control]
    best = best_fixed_answers(scenarios)
    right = sum(n for _entity, n in best.values())
    top = fixed_answer_hits(scenarios).most_common(6)
    assert right <= BLIND_DIAGNOSIS_MAX * len(faults), (
        f"a constant answer per app is right on {right}/{len(faults)} faults "
        f"(more than {BLIND_DIAGNOSIS_MAX:.0%}): {best}; most common fixed answers: {top}"
    )


def _leading(first: str, second: str) -> Diagnosis:
    return Diagnosis(
        entities=[DiagnosisEntity(name=e, contributing_factor=True) for e in (first, second)],
        propagations=[Propagation(source=first, target=second)],
    )


def test_the_fixed_pairs_are_exactly_the_pairs_the_scorer_accepts() -> None:
    """A pass forgives an extra entity the agent shows on the fault's chain, so a constant answer of
    two entities (a likely root cause leading to the service that usually alerts) could do better
    than one: on every scenario, every ordered pair of entities its ground truth names, the first
    shown leading to the second, is a correct diagnosis exactly when ``fixed_pairs`` lists it."""
    checked = accepted = 0
    for sc in ScenarioRegistry.default().all():
        pairs = fixed_pairs(sc)
        names = sorted(_named_entities(sc))
        for a in names:
            for b in names:
                if a == b:
                    continue
                correct = score_diagnosis(sc.ground_truth, _leading(a, b)).correct
                assert correct == ((a, b) in pairs), (sc.id, a, b)
                checked += 1
                accepted += correct
    assert checked > 2000 and accepted > 100  # the loop ran over the library, and pairs do pass


def test_no_fixed_pair_is_right_on_more_than_ten_percent_of_the_library() -> None:
    """The constant answer of two entities per app is held to the same bar as one entity."""
    scenarios = ScenarioRegistry.default().all()
    faults = [s for s in scenarios if not s.control]
    best = best_fixed_pairs(scenarios)
    right = sum(n for _pair, n in best.values())
    assert right <= BLIND_DIAGNOSIS_MAX * len(faults), (
        f"a constant pair per app is right on {right}/{len(faults)} faults: {best}"
    )
