"""Indexes over the store that controllers need on every event, so nothing scans all objects:
objects by uid, dependents by owner uid, pods by namespace, by node and by label."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...k8s.kinds import GroupResource
from ...k8s.selectors import labels_of, match_expression
from ..kube.store import ChangeEvent, ObjectStore
from .kinds import LEASES, NODES, PODS

Obj = dict[str, Any]
Ref = tuple[GroupResource, str, str]


class Index:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.by_uid: dict[str, Ref] = {}
        self.dependents: dict[str, set[Ref]] = defaultdict(set)
        self.pods_by_ns: dict[str, set[str]] = defaultdict(set)
        self.pods_by_node: dict[str, set[tuple[str, str]]] = defaultdict(set)
        self._owners: dict[Ref, tuple[str, ...]] = {}
        self._pod_node: dict[tuple[str, str], str] = {}
        self.node_epoch: dict[str, int] = defaultdict(int)
        """Bumped on every change to a pod bound to the node: lets callers cache per-node sums."""
        self._pods_by_label: dict[tuple[str, str, Any], set[str]] = defaultdict(set)
        """(namespace, label key, label value) -> names of the pods carrying that label."""
        self._pod_labels: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {}
        self._node_sig: dict[str, Any] = {}
        self._routine_rv = -1
        self.significant_rv = 0
        """The resource version of the last change that is not a heartbeat (:meth:`routine`):
        what a controller derives can differ only when it moves."""

    def observe(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        ns, name = meta.get("namespace", "") or "", meta.get("name", "")
        ref: Ref = (ev.gr, ns, name)
        uid = meta.get("uid", "")
        old_owners = self._owners.pop(ref, ())
        for o in old_owners:
            deps = self.dependents.get(o)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self.dependents[o]
        if ev.type == "DELETED":
            if self.by_uid.get(uid) == ref:
                del self.by_uid[uid]
        else:
            self.by_uid[uid] = ref
            owners = tuple(o.get("uid", "") for o in meta.get("ownerReferences") or [])
            if owners:
                self._owners[ref] = owners
                for o in owners:
                    self.dependents[o].add(ref)
        if ev.gr == NODES:
            sig = None if ev.type == "DELETED" else _node_signature(ev.obj)
            if ev.type == "MODIFIED" and sig == self._node_sig.get(name):
                self._routine_rv = ev.rv
            if sig is None:
                self._node_sig.pop(name, None)
            else:
                self._node_sig[name] = sig
        elif ev.gr == LEASES and ev.type == "MODIFIED":
            self._routine_rv = ev.rv
        if ev.gr == PODS:
            key = (ns, name)
            old_node = self._pod_node.pop(key, None)
            if old_node is not None:
                self.pods_by_node[old_node].discard(key)
                self.node_epoch[old_node] += 1
            for k, v in self._pod_labels.pop(key, ()):
                names = self._pods_by_label.get((ns, k, v))
                if names is not None:
                    names.discard(name)
                    if not names:
                        del self._pods_by_label[(ns, k, v)]
            if ev.type == "DELETED":
                self.pods_by_ns[ns].discard(name)
            else:
                self.pods_by_ns[ns].add(name)
                labels = tuple((meta.get("labels") or {}).items())
                if labels:
                    self._pod_labels[key] = labels
                    for k, v in labels:
                        self._pods_by_label[(ns, k, v)].add(name)
                node = ev.obj.get("spec", {}).get("nodeName")
                if node:
                    self._pod_node[key] = node
                    self.pods_by_node[node].add(key)
                    self.node_epoch[node] += 1
        if ev.rv != self._routine_rv:
            self.significant_rv = ev.rv

    def routine(self, ev: ChangeEvent) -> bool:
        """A kubelet heartbeat: a node update that changed only ``lastHeartbeatTime`` (and the
        resource version), or a Lease renewal. Nothing a controller or the behaviour model derives
        depends on those, so they are not handed on (call after :meth:`observe` saw ``ev``)."""
        return ev.rv == self._routine_rv

    def get_ref(self, ref: Ref) -> Obj | None:
        return self.store.get(*ref)

    def exists_uid(self, uid: str) -> bool:
        return uid in self.by_uid

    def owned(self, owner_uid: str, gr: GroupResource) -> list[Obj]:
        out = []
        for ref in sorted(self.dependents.get(owner_uid, ()), key=lambda r: (r[1], r[2])):
            if ref[0] != gr:
                continue
            obj = self.store.get(*ref)
            if obj is not None and controller_uid(obj) == owner_uid:
                out.append(obj)
        return out

    def pods_in(self, namespace: str) -> list[Obj]:
        out = []
        for name in sorted(self.pods_by_ns.get(namespace, ())):
            obj = self.store.get(PODS, namespace, name)
            if obj is not None:
                out.append(obj)
        return out

    def pods_selected(self, namespace: str, selector: dict[str, str] | None) -> list[Obj]:
        """Pods of ``namespace`` matching a plain map selector (empty: none), in name order
        (what filtering :meth:`pods_in` gives, without walking every pod)."""
        if not selector:
            return []
        sets = [self._pods_by_label.get((namespace, k, v), set()) for k, v in selector.items()]
        names = min(sets, key=len)
        out = []
        for name in sorted(names):
            obj = self.store.get(PODS, namespace, name)
            if obj is not None and all(
                (obj["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items()
            ):
                out.append(obj)
        return out

    def pods_matching(self, namespace: str, selector: Obj | None) -> list[Obj]:
        """Pods of ``namespace`` a ``LabelSelector`` selects, in name order (what filtering
        :meth:`pods_in` with :func:`~.selectors.matches` gives; with ``matchLabels`` it starts from
        the label index rather than every pod of the namespace)."""
        if selector is None:
            return []
        exprs = selector.get("matchExpressions") or []
        plain = selector.get("matchLabels") or {}
        candidates = self.pods_selected(namespace, plain) if plain else self.pods_in(namespace)
        if not exprs:
            return candidates
        return [p for p in candidates if all(match_expression(labels_of(p), e) for e in exprs)]

    def pods_on(self, node: str) -> list[Obj]:
        out = []
        for ns, name in sorted(self.pods_by_node.get(node, ())):
            obj = self.store.get(PODS, ns, name)
            if obj is not None:
                out.append(obj)
        return out


def _node_signature(node: Obj) -> Any:
    meta = {
        k: v for k, v in (node.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")
    }
    status = dict(node.get("status") or {})
    status["conditions"] = [
        {k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in status.get("conditions") or []
    ]
    return (meta, node.get("spec"), status)


def controller_uid(obj: Obj) -> str | None:
    for o in obj.get("metadata", {}).get("ownerReferences") or []:
        if o.get("controller"):
            return str(o.get("uid", ""))
    return None


def owner_ref(owner: Obj, api_version: str, kind: str) -> Obj:
    meta = owner["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_terminal(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def is_active(pod: Obj) -> bool:
    """Counted by workload controllers: not finished and not being deleted."""
    return not is_terminal(pod) and not pod.get("metadata", {}).get("deletionTimestamp")


def ready_since(pod: Obj) -> str | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            return str(c.get("lastTransitionTime") or "")
    return None
