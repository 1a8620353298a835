"""Ground-truth entity matching: names like ``otel-demo/Deployment/ad`` against ITBench v1 groups.

A predicted entity matches a group when the kinds agree (in any spelling kubectl accepts: kind,
singular, plural or short name, with or without the API group, any case; see :func:`norm_kind`), the namespaces agree (when both are given) and the name equals the group's
``name`` or fully matches one of its ``filter`` regexes, and — for a group with a configuration
``key`` (a flag) — the entity names that key too. Groups listed together in an ``aliases``
entry form one *alias class*: matching any member matches the class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from ..scenario.spec import GroundTruth, Group


@cache
def _kind_names() -> dict[str, str]:
    """Every spelling kubectl accepts for a resource the twin serves → its kind, lower case: the
    kind, singular, plural and short names, each also qualified with the API group
    (``schedules.chaos-mesh.org``). From the twin's resource table and the Chaos Mesh CRDs."""
    from ..k8s.kinds import BUILTIN
    from ..k8s.kinds import CHAOS_MESH_GROUP as CHAOS_GROUP
    from ..k8s.kinds import CHAOS_MESH_KINDS as CHAOS_KINDS

    spellings = [(r.kind, r.group, (r.singular_name, r.resource, *r.short_names)) for r in BUILTIN] + [
        (kind, CHAOS_GROUP, (kind.lower(), plural)) for kind, plural in CHAOS_KINDS.items()
    ]
    out: dict[str, str] = {}
    for kind, group, names in spellings:
        for name in {kind.lower(), *names}:
            out.setdefault(name.lower(), kind.lower())  # the core group first: "nodes" is a Node
            if group:
                out.setdefault(f"{name.lower()}.{group}", kind.lower())
    return out


def norm_kind(kind: str) -> str:
    """A kind as kubectl would resolve it (``Deployment``, ``deployments``, ``deploy``,
    ``deployments.apps``, ``deployments.v1.apps``...), lower case; an unknown kind as written
    (lower case, without a group suffix)."""
    k = kind.strip().lower()
    names = _kind_names()
    if k in names:
        return names[k]
    head, _, rest = k.partition(".")
    version, _, group = rest.partition(".")
    if group and f"{head}.{group}" in names:  # resource.version.group
        return names[f"{head}.{group}"]
    return names.get(head, head)


@dataclass(frozen=True)
class EntityRef:
    namespace: str | None
    kind: str
    name: str
    key: str | None = None
    """A configuration key inside the object (``#key`` after the name; see :func:`entity_text`)."""

    @classmethod
    def parse(cls, text: str) -> EntityRef | None:
        """``namespace/Kind/name`` (or ``Kind/name`` for cluster-scoped objects), optionally
        followed by ``#key`` (a configuration key inside it); None if unparsable."""
        parts = [p.strip() for p in str(text).strip().split("/")]
        key = None
        if parts and "#" in parts[-1]:  # a key may itself hold "/" only after the "#"
            head, _, tail = str(text).strip().partition("#")
            parts, key = [p.strip() for p in head.split("/")], tail.strip() or None
        if len(parts) == 3 and all(parts):
            return cls(parts[0], norm_kind(parts[1]), parts[2], key)
        if len(parts) == 2 and all(parts):
            return cls(None, norm_kind(parts[0]), parts[1], key)
        return None

    def __str__(self) -> str:
        return f"{self.namespace + '/' if self.namespace else ''}{self.kind}/{self.name}"


def entity_text(name: str, key: str | None = None) -> str:
    """A predicted entity as one string: its name, and ``#key`` when it names a configuration key
    in its ``key`` field (a key already written after the name wins)."""
    return f"{name}#{key}" if key and "#" not in name else name


def key_matches(group_key: str, key: str | None) -> bool:
    """Whether an entity's ``key`` names the group's key: the same, or the flag alone."""
    return bool(key) and (key == group_key or group_key.endswith(f"#{key}"))


def group_matches(g: Group, e: EntityRef, keys: bool = True) -> bool:
    """Whether ``e`` names group ``g`` (with ``keys``, a keyed group needs the entity to name its
    key; without, the object is enough: where the group sits in the topology)."""
    if norm_kind(g.kind) != e.kind:
        return False
    if keys and g.key and not key_matches(g.key, e.key):
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
