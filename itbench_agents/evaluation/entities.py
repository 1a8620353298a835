"""Ground-truth entity matching: names like ``otel-demo/Deployment/ad`` against ITBench v1 groups.

A predicted entity matches a group when the kinds agree (case-insensitive, plural and API-group
suffixes tolerated), the namespaces agree (when both are given) and the name equals the group's
``name`` or fully matches one of its ``filter`` regexes. Groups listed together in an ``aliases``
entry form one *alias class*: matching any member matches the class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..scenario.spec import GroundTruth, Group

_PLURALS = {
    "pods": "pod",
    "services": "service",
    "svc": "service",
    "deployments": "deployment",
    "deploy": "deployment",
    "replicasets": "replicaset",
    "rs": "replicaset",
    "statefulsets": "statefulset",
    "daemonsets": "daemonset",
    "configmaps": "configmap",
    "cm": "configmap",
    "secrets": "secret",
    "namespaces": "namespace",
    "ns": "namespace",
    "nodes": "node",
    "no": "node",
    "persistentvolumeclaims": "persistentvolumeclaim",
    "pvc": "persistentvolumeclaim",
    "networkpolicies": "networkpolicy",
    "netpol": "networkpolicy",
    "resourcequotas": "resourcequota",
    "quota": "resourcequota",
    "horizontalpodautoscalers": "horizontalpodautoscaler",
    "hpa": "horizontalpodautoscaler",
    "priorityclasses": "priorityclass",
}


def norm_kind(kind: str) -> str:
    k = kind.strip().lower().split(".", 1)[0]
    return _PLURALS.get(k, k)


@dataclass(frozen=True)
class EntityRef:
    namespace: str | None
    kind: str
    name: str

    @classmethod
    def parse(cls, text: str) -> EntityRef | None:
        """``namespace/Kind/name`` (or ``Kind/name`` for cluster-scoped objects); None if unparsable."""
        parts = [p.strip() for p in str(text).strip().split("/")]
        if len(parts) == 3 and all(parts):
            return cls(parts[0], norm_kind(parts[1]), parts[2])
        if len(parts) == 2 and all(parts):
            return cls(None, norm_kind(parts[0]), parts[1])
        return None

    def __str__(self) -> str:
        return f"{self.namespace + '/' if self.namespace else ''}{self.kind}/{self.name}"


def group_matches(g: Group, e: EntityRef) -> bool:
    if norm_kind(g.kind) != e.kind:
        return False
    if g.namespace and e.namespace and g.namespace != e.namespace:
        return False
    if g.name and g.name == e.name:
        return True
    return any(re.fullmatch(f, e.name) for f in g.filter)


class AliasIndex:
    """Union-find over group ids: ``cls(gid)`` is the alias class's representative."""

    def __init__(self, gt: GroundTruth) -> None:
        self.gt = gt
        self._parent = {g.id: g.id for g in gt.groups}
        for a in gt.aliases:
            for other in a[1:]:
                self._union(a[0], other)

    def _find(self, x: str) -> str:
        while self._parent[x] != x:
            self._parent[x] = self._parent[self._parent[x]]
            x = self._parent[x]
        return x

    def _union(self, a: str, b: str) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            self._parent[hi] = lo

    def cls(self, gid: str) -> str:
        return self._find(gid)

    def members(self, cls_id: str) -> list[str]:
        return [g for g in self._parent if self._find(g) == cls_id]

    def root_cause_classes(self) -> set[str]:
        return {self.cls(g.id) for g in self.gt.root_causes()}

    def classes_of(self, e: EntityRef) -> set[str]:
        """Alias classes of every group the entity matches."""
        return {self.cls(g.id) for g in self.gt.groups if group_matches(g, e)}

    def class_of_name(self, name: str) -> str | None:
        """The (first) alias class a predicted name falls in, or None."""
        e = EntityRef.parse(name)
        if e is None:
            return None
        hits = sorted(self.classes_of(e))
        # prefer a root-cause class when the entity is in several
        rc = self.root_cause_classes()
        for h in hits:
            if h in rc:
                return h
        return hits[0] if hits else None
