"""The ground truth's propagation chains: the longest path through ``propagations`` that starts at
a root-cause group (the scenario's complexity counts its length; ``evaluation/chain.py`` scores an
agent's chain against it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol


class _Edge(Protocol):
    @property
    def source(self) -> str: ...

    @property
    def target(self) -> str: ...


class _Group(Protocol):
    @property
    def id(self) -> str: ...


class GroundTruth(Protocol):
    """What the chains read of a scenario's ground truth (``spec.GroundTruth``)."""

    @property
    def propagations(self) -> Iterable[_Edge]: ...

    def root_causes(self) -> Iterable[_Group]: ...


def longest_path(edges: list[tuple[str, str]], starts: Sequence[str]) -> list[str]:
    adj: dict[str, list[str]] = {}
    for s, t in edges:
        adj.setdefault(s, []).append(t)
    best: list[str] = []

    def dfs(node: str, path: list[str]) -> None:
        nonlocal best
        if len(path) > len(best):
            best = list(path)
        for nxt in adj.get(node, []):
            if nxt not in path:  # no cycles
                path.append(nxt)
                dfs(nxt, path)
                path.pop()

    for s in starts:
        dfs(s, [s])
    return best


def gt_chain(gt: GroundTruth) -> list[str]:
    """Group ids along the longest propagation path from a root cause (just the root causes'
    first group when there are no propagations; empty for a control)."""
    roots = [g.id for g in gt.root_causes()]
    edges = [(p.source, p.target) for p in gt.propagations]
    if not roots:
        return []
    path = longest_path(edges, roots)
    return path or roots[:1]


def gt_chains(gt: GroundTruth) -> list[list[str]]:
    """One chain per root-cause group: the longest propagation path starting at it."""
    edges = [(p.source, p.target) for p in gt.propagations]
    return [longest_path(edges, [g.id]) or [g.id] for g in gt.root_causes()]
