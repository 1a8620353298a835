"""NTAM — Normalized Topology-Aware Match (ITBench paper, App. C.6.3), implemented from its prose.

Formula and hyperparameters are documented with worked examples in ``docs/metrics.md``:

    sim(p, g) = 1                                              if p falls in g's alias class
              = exp(-λ · d(p, g)) / (1 + β · ln(1 + S(p)))     otherwise
    raw       = Σ_i w_i · max_p sim(p, g_i)  /  Σ_i w_i          w_i = γ^(position of g_i in the chain)
    penalty   = exp(-μ · |n_pred − n_gt| / n_gt)
    NTAM      = raw · penalty ∈ [0, 1]

``d`` is the weighted shortest-path distance in the topology graph (edge weights by type, see
``topology.py``), ``S(p)`` the size of p's sub-tree (what it owns/selects/contains): a vague answer
such as a whole namespace is close to everything and is discounted, BM25-style.
Fault localisation (FL) uses the root-cause groups (all weight 1); fault propagation (FPC) uses the
ground-truth chain (root cause weighted most).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..scenario.propagation import gt_chains
from ..scenario.spec import GroundTruth, Group
from .entities import AliasIndex, EntityRef, group_matches
from .topology import Topology, node_key


@dataclass(frozen=True)
class NtamParams:
    lam: float = 0.5
    """λ: distance decay."""
    beta: float = 0.5
    """β: sub-tree (specificity) discount."""
    gamma: float = 0.5
    """γ: importance decay along the chain (root = 1, next = γ, ...)."""
    mu: float = 0.5
    """μ: length-mismatch penalty."""


DEFAULT = NtamParams()


def _group_nodes(topo: Topology, g: Group) -> set[str]:
    out = set()
    for n in topo.nodes:
        e = EntityRef.parse(n) if n.count("/") == 2 else _cluster_ref(n)
        if e is not None and group_matches(g, e, keys=False):
            out.add(n)
    return out or {f"gt:{g.id}"}


def _cluster_ref(n: str) -> EntityRef | None:
    parts = n.split("/")
    return EntityRef(None, parts[0], parts[1]) if len(parts) == 2 else None


class NtamScorer:
    """Scores predicted entity lists against one ground truth on one topology."""

    def __init__(
        self, gt: GroundTruth, topology: Topology | None = None, params: NtamParams = DEFAULT
    ) -> None:
        self.gt = gt
        self.params = params
        self.aliases = AliasIndex(gt)
        topo = Topology(set(topology.nodes), list(topology.edges)) if topology else Topology()
        self.group_nodes = {g.id: _group_nodes(topo, g) for g in gt.groups}
        for nodes in self.group_nodes.values():
            topo.nodes |= nodes
        for p in gt.propagations:
            a = sorted(self.group_nodes[p.source])[0]
            b = sorted(self.group_nodes[p.target])[0]
            topo.add_edge(a, b, "propagation")
        self.topo = topo
        self._class_nodes: dict[str, set[str]] = {}
        for g in gt.groups:
            self._class_nodes.setdefault(self.aliases.cls(g.id), set()).update(self.group_nodes[g.id])
        self._dist_cache: dict[str, dict[str, float]] = {}

    # ------------------------------------------------------------------ pieces
    def _dist_to_class(self, cls_id: str) -> dict[str, float]:
        if cls_id not in self._dist_cache:
            self._dist_cache[cls_id] = self.topo.distances_from(self._class_nodes[cls_id])
        return self._dist_cache[cls_id]

    def similarity(self, predicted: str, gid: str) -> float:
        e = EntityRef.parse(predicted)
        if e is None:
            return 0.0
        cls_id = self.aliases.cls(gid)
        classes = self.aliases.classes_of(e)
        if cls_id in classes:
            return 1.0
        key = node_key(e.namespace, e.kind, e.name)
        if key in self.topo.nodes:
            sources = {key}
        elif classes:  # not in the recorded graph, but it is a known ground-truth entity
            sources = set().union(*(self._class_nodes[c] for c in classes))
        else:
            return 0.0
        dist = self._dist_to_class(cls_id)
        d = min((dist[s] for s in sources if s in dist), default=math.inf)
        if math.isinf(d):
            return 0.0
        subtree = max(self.topo.subtree_size(s) for s in sources)
        p = self.params
        return math.exp(-p.lam * d) / (1.0 + p.beta * math.log1p(subtree))

    def _score(self, predicted: Sequence[str], targets: list[tuple[str, float]]) -> float:
        preds = list(dict.fromkeys(predicted))
        if not targets:
            return 1.0 if not preds else 0.0
        if not preds:
            return 0.0
        num = sum(w * max(self.similarity(p, gid) for p in preds) for gid, w in targets)
        raw = num / sum(w for _, w in targets)
        n_gt = len(targets)
        penalty = math.exp(-self.params.mu * abs(len(preds) - n_gt) / n_gt)
        return max(0.0, min(1.0, raw * penalty))

    # ------------------------------------------------------------------ the two metrics
    def fault_localization(self, predicted_root_causes: Sequence[str]) -> float:
        """NTAM over root-cause entities (one target per root-cause alias class)."""
        seen: dict[str, str] = {}
        for g in self.gt.root_causes():
            seen.setdefault(self.aliases.cls(g.id), g.id)
        return self._score(predicted_root_causes, [(gid, 1.0) for gid in seen.values()])

    def fault_propagation(self, predicted_entities: Sequence[str]) -> float:
        """NTAM over the ground-truth chains (one per root cause), weighted by chain position."""
        best: dict[str, tuple[str, int]] = {}
        for chain in gt_chains(self.gt):
            for i, gid in enumerate(chain):
                c = self.aliases.cls(gid)
                if c not in best or i < best[c][1]:
                    best[c] = (gid, i)
        targets = [(gid, self.params.gamma**i) for gid, i in best.values()]
        return self._score(predicted_entities, targets)
