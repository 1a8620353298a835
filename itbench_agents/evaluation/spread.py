"""How far one fixed answer gets: the diagnoses that are right on a scenario whatever happened.

A diagnosis is correct when it names every root-cause alias class and nothing the fault did not
reach (``diagnosis.py``). A single entity is therefore a correct answer on exactly the fault
scenarios whose root causes form one alias class that the entity belongs to; a pair (the first
shown leading to the second), where it names the root cause and something on the fault's chain, or
the two root causes. Counting those over a library says what an agent that always gives the same
answer would score, for every answer at once — the strongest "constant answer", computed from the
ground truth without running an episode. The benchmark holds it under the same bar as the blind
strategies (``personas/sre/audit.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..scenario.spec import Scenario
from .chain import downstream_classes
from .entities import AliasIndex


def _named(scenario: Scenario, members: set[str]) -> set[str]:
    """The entity names of the groups ``members`` that have a name (pods, known only by a pattern,
    are left out: their names differ between episodes)."""
    return {
        f"{g.namespace or scenario.namespace}/{g.kind}/{g.name}" + (f"#{g.key}" if g.key else "")
        for g in scenario.ground_truth.groups
        if g.id in members and g.name
    }


def fixed_answers(scenario: Scenario) -> set[str]:
    """The single entities (``namespace/Kind/name``, ``#key`` for a keyed group) that alone are a
    correct diagnosis of ``scenario``: the named members of its one root-cause alias class (none
    when the root causes span several classes, or on a no-fault control). Members known only by a
    name pattern (pods) are left out: their names differ between episodes."""
    if scenario.control:
        return set()
    gt = scenario.ground_truth
    aliases = AliasIndex(gt)
    classes = aliases.root_cause_classes()
    if len(classes) != 1:
        return set()
    (cls_id,) = classes
    return _named(scenario, set(aliases.members(cls_id)))


def fixed_answer_hits(scenarios: Iterable[Scenario]) -> Counter[str]:
    """For every entity that alone is a correct diagnosis somewhere: on how many scenarios."""
    hits: Counter[str] = Counter()
    for sc in scenarios:
        hits.update(fixed_answers(sc))
    return hits


def best_fixed_answers(scenarios: Iterable[Scenario]) -> dict[str, tuple[str, int]]:
    """Per namespace, the fixed answer right on the most scenarios (ties: the first in name order)
    and that number."""
    best: dict[str, tuple[str, int]] = {}
    for entity, n in sorted(fixed_answer_hits(scenarios).items()):
        ns = entity.split("/", 1)[0]
        if ns not in best or n > best[ns][1]:
            best[ns] = (entity, n)
    return best


def fixed_pairs(scenario: Scenario) -> set[tuple[str, str]]:
    """The answers of two entities, the first shown leading to the second (one propagation), that
    are a correct diagnosis of ``scenario``: a member of its one root-cause class with another
    member or with a member of a class the fault reached, or one member of each of its two
    root-cause classes (either way round)."""
    if scenario.control:
        return set()
    gt = scenario.ground_truth
    aliases = AliasIndex(gt)
    classes = sorted(aliases.root_cause_classes())
    if len(classes) == 2:
        first, second = (_named(scenario, set(aliases.members(c))) for c in classes)
        return {pair for a in first for b in second for pair in ((a, b), (b, a))}
    if len(classes) != 1:
        return set()
    roots = _named(scenario, set(aliases.members(classes[0])))
    reached = downstream_classes(gt, aliases) - set(classes)
    others = roots | _named(scenario, {g for c in reached for g in aliases.members(c)})
    return {(a, b) for a in roots for b in others if a != b}


def best_fixed_pairs(scenarios: Iterable[Scenario]) -> dict[str, tuple[tuple[str, str], int]]:
    """Per namespace, the fixed two-entity answer right on the most scenarios, and that number."""
    hits: Counter[tuple[str, str]] = Counter()
    for sc in scenarios:
        hits.update(fixed_pairs(sc))
    best: dict[str, tuple[tuple[str, str], int]] = {}
    for pair, n in sorted(hits.items()):
        ns = pair[0].split("/", 1)[0]
        if pair[1].split("/", 1)[0] == ns and (ns not in best or n > best[ns][1]):
            best[ns] = (pair, n)
    return best
