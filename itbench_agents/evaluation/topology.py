"""The topology graph NTAM measures distances on: Kubernetes objects and how they relate.

Nodes are ``namespace/kind/name`` keys (kind lower-case; cluster-scoped objects ``kind/name``).
Edges are typed and directed from the "parent" (owner, selector, namespace, caller):

=============  ==========================================================  ======
type           meaning                                                     weight
=============  ==========================================================  ======
owns           ownerReferences (Deployment → ReplicaSet → Pod)             0.5
selects        a Service's selector matches a Pod                          0.5
configures     a Pod mounts/reads a ConfigMap, Secret or PVC; HPA → target 1.0
calls          the app's call graph (caller workload → callee workload)    1.0
propagation    a ground-truth propagation edge between entities            1.0
runs_on        Pod → Node                                                  2.0
contains       Namespace → every object in it                              3.0
=============  ==========================================================  ======

The harness records this graph for every episode (``topology.json``) so ``itbench score`` can
re-score from files.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..k8s.selectors import matches_map
from .entities import norm_kind

EDGE_WEIGHTS: dict[str, float] = {
    "owns": 0.5,
    "selects": 0.5,
    "configures": 1.0,
    "calls": 1.0,
    "propagation": 1.0,
    "runs_on": 2.0,
    "contains": 3.0,
}
SUBTREE_EDGES = ("owns", "selects", "contains")


def node_key(namespace: str | None, kind: str, name: str) -> str:
    k = norm_kind(kind)
    return f"{namespace}/{k}/{name}" if namespace else f"{k}/{name}"


@dataclass
class Topology:
    nodes: set[str] = field(default_factory=set)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    at_fault: set[str] = field(default_factory=set)
    """Keys of the objects that existed when the fault's alerts fired (the graph is the end state):
    with :attr:`nodes`, the objects an agent may name (empty when not recorded)."""
    released: set[str] = field(default_factory=set)
    """Keys of the ReplicaSets created between the fault's injection and the alerts: the fault's
    release when it rolls a Deployment out (and the churn's benign ones). Naming such a ReplicaSet
    names its Deployment (:meth:`release_owner`); an older one names nothing."""

    def release_owner(self, namespace: str | None, name: str) -> str | None:
        """The Deployment (``namespace/Deployment/name``) whose rollout created the ReplicaSet
        ``name`` after the injection, or None (not such a ReplicaSet, or nothing recorded)."""
        keys = [k for k in self.released if k.endswith("/" + node_key(None, "ReplicaSet", name))]
        if namespace:
            keys = [k for k in keys if k == node_key(namespace, "ReplicaSet", name)]
        if len(keys) != 1:
            return None
        key = keys[0]
        ns = key.split("/", 1)[0]
        owners = [a for a, b, t in self.edges if t == "owns" and b == key and "/deployment/" in a]
        if owners:
            return f"{ns}/Deployment/{owners[0].rsplit('/', 1)[1]}"
        # the end state may have lost the Deployment: a ReplicaSet is named <deployment>-<hash>
        return f"{ns}/Deployment/{name.rsplit('-', 1)[0]}" if "-" in name else None

    def existed(self, namespace: str | None, kind: str, name: str) -> bool | None:
        """Whether the object existed at the fault or at the end; None when unknown (nothing
        recorded at the fault)."""
        if not self.at_fault:
            return None
        known = self.nodes | self.at_fault
        if namespace:
            return node_key(namespace, kind, name) in known
        suffix = "/" + node_key(None, kind, name)
        return any(k == suffix[1:] or k.endswith(suffix) for k in known)

    def add_edge(self, a: str, b: str, kind: str) -> None:
        self.nodes.add(a)
        self.nodes.add(b)
        self.edges.append((a, b, kind))

    # ------------------------------------------------------------------ graph queries
    def _adj(self) -> dict[str, list[tuple[str, float]]]:
        adj: dict[str, list[tuple[str, float]]] = {n: [] for n in self.nodes}
        for a, b, t in self.edges:
            w = EDGE_WEIGHTS.get(t, 1.0)
            adj.setdefault(a, []).append((b, w))
            adj.setdefault(b, []).append((a, w))
        return adj

    def distances_from(self, sources: Iterable[str]) -> dict[str, float]:
        """Weighted shortest-path distance (undirected) from the nearest of ``sources``."""
        adj = self._adj()
        dist: dict[str, float] = {}
        heap = [(0.0, s) for s in set(sources)]
        heapq.heapify(heap)
        while heap:
            d, n = heapq.heappop(heap)
            if n in dist:
                continue
            dist[n] = d
            for m, w in adj.get(n, []):
                if m not in dist:
                    heapq.heappush(heap, (d + w, m))
        return dist

    def subtree_size(self, node: str) -> int:
        """Descendants reachable through owns / selects / contains edges (not counting ``node``)."""
        children: dict[str, list[str]] = {}
        for a, b, t in self.edges:
            if t in SUBTREE_EDGES:
                children.setdefault(a, []).append(b)
        seen: set[str] = set()
        stack = [node]
        while stack:
            for c in children.get(stack.pop(), []):
                if c not in seen and c != node:
                    seen.add(c)
                    stack.append(c)
        return len(seen)

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": sorted(self.nodes), "edges": [list(e) for e in self.edges]}
        if self.at_fault:
            out["at_fault"] = sorted(self.at_fault)
        if self.released:
            out["released"] = sorted(self.released)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Topology:
        t = cls(set(data.get("nodes", [])), [], set(data.get("at_fault", [])), set(data.get("released", [])))
        for a, b, k in data.get("edges", []):
            t.add_edge(a, b, k)
        return t

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json()) + "\n")

    @classmethod
    def read(cls, path: str | Path) -> Topology:
        return cls.from_json(json.loads(Path(path).read_text()))


# (field of a volume / envFrom item / env valueFrom, kind of the object it names, key of the name)
_VOLUME_REFS = (
    ("configMap", "ConfigMap", "name"),
    ("secret", "Secret", "secretName"),
    ("persistentVolumeClaim", "PersistentVolumeClaim", "claimName"),
)
_ENV_FROM_REFS = (("configMapRef", "ConfigMap", "name"), ("secretRef", "Secret", "name"))
_ENV_VALUE_REFS = (("configMapKeyRef", "ConfigMap", "name"), ("secretKeyRef", "Secret", "name"))


def _refs(holder: dict[str, Any], table: tuple[tuple[str, str, str], ...]) -> Iterator[tuple[str, str]]:
    for fld, kind, name_key in table:
        if fld in holder:
            yield kind, holder[fld].get(name_key, "")


def _pod_config_refs(spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(kind, name)`` of each ConfigMap, Secret and PersistentVolumeClaim a pod spec mounts or reads."""
    for v in spec.get("volumes") or []:
        yield from _refs(v, _VOLUME_REFS)
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for ef in c.get("envFrom") or []:
            yield from _refs(ef, _ENV_FROM_REFS)
        for ev in c.get("env") or []:
            src = (ev.get("valueFrom") or {}) if isinstance(ev, dict) else {}
            yield from _refs(src, _ENV_VALUE_REFS)


def topology_from_objects(
    objs: Iterable[dict[str, Any]], call_edges: Iterable[tuple[str, str, str]] = ()
) -> Topology:
    """Build the graph from Kubernetes objects (as ``kubectl get -o json`` items, with ``kind``).

    ``call_edges`` are ``(namespace, caller workload, callee workload)`` triples from the app's call
    graph; they connect the two Deployments."""
    topo = Topology()
    objs = list(objs)
    by_uid: dict[str, str] = {}
    for o in objs:
        m = o.get("metadata", {})
        key = node_key(m.get("namespace"), o.get("kind", "?"), m.get("name", "?"))
        topo.nodes.add(key)
        if m.get("uid"):
            by_uid[m["uid"]] = key
    pods = [o for o in objs if o.get("kind") == "Pod"]
    for o in objs:
        m = o.get("metadata", {})
        ns = m.get("namespace")
        kind = o.get("kind", "?")
        key = node_key(ns, kind, m.get("name", "?"))
        if ns and kind != "Namespace":
            topo.add_edge(node_key(None, "Namespace", ns), key, "contains")
        for ref in m.get("ownerReferences") or []:
            parent = by_uid.get(ref.get("uid", "")) or node_key(
                ns, ref.get("kind", "?"), ref.get("name", "?")
            )
            topo.add_edge(parent, key, "owns")
        spec = o.get("spec") or {}
        if kind == "Service":
            sel = spec.get("selector") or {}
            for p in pods:
                pm = p.get("metadata", {})
                if pm.get("namespace") == ns and matches_map(sel, pm.get("labels") or {}):
                    topo.add_edge(key, node_key(ns, "Pod", pm["name"]), "selects")
        elif kind == "Pod":
            if spec.get("nodeName"):
                topo.add_edge(key, node_key(None, "Node", spec["nodeName"]), "runs_on")
            for ref_kind, ref_name in _pod_config_refs(spec):
                topo.add_edge(key, node_key(ns, ref_kind, ref_name), "configures")
        elif kind == "HorizontalPodAutoscaler":
            ref = spec.get("scaleTargetRef") or {}
            if ref.get("name"):
                topo.add_edge(key, node_key(ns, ref.get("kind", "Deployment"), ref["name"]), "configures")
    for ns, caller, callee in call_edges:
        topo.add_edge(node_key(ns, "Deployment", caller), node_key(ns, "Deployment", callee), "calls")
    return topo
