"""Propagation chains and their LCS score (ITBench-Lite's PROPAGATION_CHAIN, computed without a judge).

The ground-truth chain is the longest path through ``propagations`` that starts at a root-cause
group. A predicted chain is read from the agent's ``propagations`` the same way (starting at a
source nobody points to). Both are mapped to alias classes, consecutive repeats are contracted,
and ``TP = |LCS|``; ``P = TP/|predicted|``, ``R = TP/|ground truth|``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..scenario.propagation import gt_chain, longest_path
from .prf import PRF

if TYPE_CHECKING:
    from ..core.output import Propagation
    from ..scenario.spec import GroundTruth
    from .entities import AliasIndex


def downstream_classes(gt: GroundTruth, aliases: AliasIndex) -> set[str]:
    """Alias classes the fault reached: every class a ground-truth propagation leads to from a
    root-cause class, directly or through others (the root causes themselves not included unless a
    propagation returns to them)."""
    edges: dict[str, set[str]] = {}
    for p in gt.propagations:
        edges.setdefault(aliases.cls(p.source), set()).add(aliases.cls(p.target))
    return reachable(edges, aliases.root_cause_classes())


def reachable(edges: dict[str, set[str]], starts: Iterable[str]) -> set[str]:
    """Every node some path of ``edges`` leads to from ``starts`` (a start only if a path returns
    to it)."""
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def predicted_chain(props: Sequence[Propagation]) -> list[str]:
    """Entity names along the longest path of the agent's propagations."""
    edges = [(p.source, p.target) for p in props]
    if not edges:
        return []
    targets = {t for _, t in edges}
    starts = [s for s, _ in edges if s not in targets] or [edges[0][0]]
    seen: list[str] = []
    for s in starts:
        if s not in seen:
            seen.append(s)
    return longest_path(edges, seen)


def contract(seq: Sequence[str]) -> list[str]:
    out: list[str] = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def chain_score(
    gt: GroundTruth, aliases: AliasIndex, props: Sequence[Propagation], root_causes: Sequence[str] = ()
) -> PRF:
    """LCS P/R/F1; an agent that reports no propagations is read as the one-entity chain of its
    root cause(s) (right for a fault that propagates nowhere)."""
    gt_path = contract([aliases.cls(g) for g in gt_chain(gt)])
    pred_names = predicted_chain(props) or list(root_causes)
    pred_path = contract([aliases.class_of_name(n) or f"?{n}" for n in pred_names])
    if not gt.propagations and not gt.root_causes():
        # control: the right chain is no chain
        return PRF.of(0, len(pred_path), 0, 0)
    if not gt.propagations:  # no chain, only root cause(s): order carries no information
        gt_set = {aliases.cls(g.id) for g in gt.root_causes()}
        pred_set = set(pred_path)
        hit = len(gt_set & pred_set)
        return PRF.of(hit, len(pred_set), hit, len(gt_set))
    tp = lcs_length(gt_path, pred_path)
    return PRF.of(tp, len(pred_path), tp, len(gt_path))
