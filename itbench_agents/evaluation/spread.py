"""How far one fixed answer gets: the diagnoses that are right on a scenario whatever happened.

A diagnosis is correct when it names every root-cause alias class and nothing else
(``diagnosis.py``). A single entity is therefore a correct answer on exactly the fault scenarios
whose root causes form one alias class that the entity belongs to. Counting those over a library
says what an agent that always gives the same answer would score, for every answer at once — the
strongest "constant answer", computed from the ground truth without running an episode. The
benchmark holds it under the same bar as the blind strategies (``personas/sre/audit.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..scenario.spec import Scenario
from .entities import AliasIndex


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
    members = set(aliases.members(cls_id))
    return {
        f"{g.namespace or scenario.namespace}/{g.kind}/{g.name}" + (f"#{g.key}" if g.key else "")
        for g in gt.groups
        if g.id in members and g.name
    }


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
