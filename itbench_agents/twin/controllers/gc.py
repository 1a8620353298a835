"""Garbage collection and namespace lifecycle.

- Dependents whose owners (by ``ownerReferences`` uid) are all gone are deleted, cascading.
- ``foregroundDeletion`` / ``orphan`` finalizers on an owner being deleted are honoured.
- A namespace being deleted (``deletionTimestamp`` or phase Terminating) has everything inside
  deleted, then disappears, as kube-controller-manager's namespace deleter does it: what
  finalizers hold (an object's, a pod's) stays, marked deleted, until whoever set them removes
  them, and the namespace with it, Terminating, with the deleter's status conditions saying what
  remains (``NamespaceContentRemaining``, ``NamespaceFinalizersRemaining``); so do finalizers of
  the namespace's own (``metadata.finalizers``). A namespace removed outright takes its contents
  with it, finalizers or not.
- Pods go as a background-propagation DELETE sends them: bound, running pods get a grace period
  (``deletionTimestamp``, shown Terminating) and the kubelet removes them; a terminating namespace
  waits for them.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ...k8s.kinds import GroupResource
from ...k8s.times import rfc3339
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent, clone
from .base import Controller
from .kinds import NAMESPACES, PODS

if TYPE_CHECKING:
    from ..core import TwinCore as Twin
    from .index import Index

Obj = dict[str, Any]

NAMESPACE_DELETION_OK = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}
"""The namespace deleter's conditions as they read when nothing is wrong (status False), in its
order (kube-controller-manager's ``namespace/deletion/status_condition_utils.go``)."""


def ok_conditions() -> dict[str, tuple[str, str, str]]:
    """Condition type → (status, reason, message), each as it reads when nothing is wrong."""
    return {kind: ("False", reason, message) for kind, (reason, message) in NAMESPACE_DELETION_OK.items()}


class GarbageCollector(Controller):
    name = "garbage-collector"

    def __init__(self, twin: Twin, index: Index) -> None:
        super().__init__(twin, index)
        self._held: set[str] = set()
        """Terminating namespaces whose contents finalizers (or stopping pods) still hold."""

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        uid = meta.get("uid", "")
        if ev.type == "DELETED":
            if uid in self.index.dependents:
                self.enqueue(("orphans", uid))
            if ev.gr == NAMESPACES:
                self.enqueue(("ns", meta["name"]))
            elif meta.get("namespace") in self._held:
                self.enqueue(("ns", meta["namespace"]))  # one of what held a terminating namespace
            return
        if ev.gr == NAMESPACES and (
            meta.get("deletionTimestamp") or ev.obj.get("status", {}).get("phase") == "Terminating"
        ):
            self.enqueue(("ns", meta["name"]))
            return
        if meta.get("deletionTimestamp") and set(meta.get("finalizers") or []) & {
            "foregroundDeletion",
            "orphan",
        }:
            self.enqueue(("finalize", ev.gr, meta.get("namespace", ""), meta["name"]))
        owners = meta.get("ownerReferences") or []
        if owners and not any(self.index.exists_uid(o.get("uid", "")) for o in owners):
            # created with an owner that no longer exists
            self.enqueue(("orphans", owners[0].get("uid", "")))

    def sync(self, key: Any) -> None:
        if key[0] == "orphans":
            self._collect(key[1])
        elif key[0] == "ns":
            self._namespace(key[1])
        elif key[0] == "finalize":
            self._finalize(key[1], key[2], key[3])

    def _collect(self, owner_uid: str) -> None:
        for ref in sorted(self.index.dependents.get(owner_uid, set())):
            obj = self.store.get(*ref)
            if obj is None:
                continue
            owners = obj["metadata"].get("ownerReferences") or []
            if any(self.index.exists_uid(o.get("uid", "")) for o in owners):
                continue
            if ref[0] == PODS:
                self._stop_pod(obj)
                continue
            with contextlib.suppress(ApiError):
                self.store.delete(*ref)

    def _finalize(self, gr: GroupResource, ns: str, name: str) -> None:
        obj = self.store.get(gr, ns, name)
        if obj is None:
            return
        uid = obj["metadata"]["uid"]
        finalizers = list(obj["metadata"].get("finalizers") or [])
        deps = sorted(self.index.dependents.get(uid, set()))
        if "orphan" in finalizers:
            for ref in deps:
                dep = self.store.get(*ref)
                if dep is None:
                    continue
                new = clone(dep)
                new["metadata"]["ownerReferences"] = [
                    o for o in new["metadata"].get("ownerReferences") or [] if o.get("uid") != uid
                ]
                if not new["metadata"]["ownerReferences"]:
                    del new["metadata"]["ownerReferences"]
                new["metadata"].pop("resourceVersion", None)
                self.store.update(ref[0], new)
            finalizers.remove("orphan")
        if "foregroundDeletion" in finalizers:
            remaining = [r for r in deps if self.store.get(*r) is not None]
            if remaining:
                for ref in remaining:
                    dep = self.store.get(*ref)
                    if dep is not None and ref[0] == PODS:
                        self._stop_pod(dep)
                    elif dep is not None and not dep["metadata"].get("deletionTimestamp"):
                        with contextlib.suppress(ApiError):
                            self.store.delete(*ref)
                # re-check when dependents are gone
                self.enqueue_at(self.now() + 1.0, ("finalize", gr, ns, name))
                return
            finalizers.remove("foregroundDeletion")
        fresh = clone(obj)
        fresh["metadata"]["finalizers"] = finalizers
        if not finalizers:
            del fresh["metadata"]["finalizers"]
        fresh["metadata"].pop("resourceVersion", None)
        self.store.update(gr, fresh)

    def _namespace(self, name: str) -> None:
        ns = self.store.get(NAMESPACES, "", name)
        if ns is None:
            self._held.discard(name)
            self._remove_contents(name)
            return
        remaining: dict[GroupResource, int] = {}
        by_finalizer: dict[str, int] = {}
        stopping = 0
        for gr in list(self.store.kinds()):
            if gr == NAMESPACES:
                continue
            for obj in list(self.store.list(gr, name)):
                if not obj["metadata"].get("namespace"):
                    continue
                if gr == PODS:
                    # pods stop gracefully: the kubelet kills the containers and removes them
                    if not self._stop_pod(obj):
                        continue
                    stopping += not obj["metadata"].get("finalizers")
                else:
                    with contextlib.suppress(ApiError):
                        self.store.delete(gr, name, obj["metadata"]["name"])
                left = self.store.get(gr, name, obj["metadata"]["name"])
                if left is None:
                    continue
                remaining[gr] = remaining.get(gr, 0) + 1
                for f in left["metadata"].get("finalizers") or []:
                    by_finalizer[f] = by_finalizer.get(f, 0) + 1
        if remaining:
            # what finalizers hold goes when they are removed (a DELETED event in it runs this again)
            self._held.add(name)
            self._set_conditions(ns, remaining, by_finalizer)
            if stopping:
                self.enqueue_at(self.now() + 1.0, ("ns", name))  # gone once its pods are
            return
        self._held.discard(name)
        if ns["metadata"].get("finalizers"):
            # held by finalizers of its own until they are removed (the store then removes it);
            # the namespace controller's own part is done
            if (ns.get("spec") or {}).get("finalizers"):
                new = clone(ns)
                new["spec"]["finalizers"] = []
                new["metadata"].pop("resourceVersion", None)
                with contextlib.suppress(ApiError):
                    self.store.update(NAMESPACES, new)
            return
        with contextlib.suppress(ApiError):
            self.store.delete(NAMESPACES, "", name)

    def _remove_contents(self, name: str) -> None:
        """A namespace removed outright takes its contents with it, finalizers or not."""
        for gr in list(self.store.kinds()):
            if gr == NAMESPACES:
                continue
            for obj in list(self.store.list(gr, name)):
                if not obj["metadata"].get("namespace"):
                    continue
                try:
                    if obj["metadata"].get("finalizers"):
                        new = clone(obj)
                        new["metadata"].pop("finalizers")
                        new["metadata"].pop("resourceVersion", None)
                        if not new["metadata"].get("deletionTimestamp"):
                            self.store.delete(gr, name, obj["metadata"]["name"])
                            cur = self.store.get(gr, name, obj["metadata"]["name"])
                            if cur is None:
                                continue
                            new = clone(cur)
                            new["metadata"].pop("finalizers", None)
                            new["metadata"].pop("resourceVersion", None)
                        self.store.update(gr, new)
                    else:
                        self.store.delete(gr, name, obj["metadata"]["name"])
                except ApiError:
                    pass

    def _set_conditions(
        self, ns: Obj, remaining: dict[GroupResource, int], by_finalizer: dict[str, int]
    ) -> None:
        """The namespace deleter's status conditions (``NamespaceContentRemaining``,
        ``NamespaceFinalizersRemaining``, and the three that say discovery and deletion went well),
        written when they change."""
        wanted = ok_conditions()
        if remaining:
            listed = sorted(
                f"{gr.resource}.{gr.group} has {n} resource instances" for gr, n in remaining.items()
            )
            wanted["NamespaceContentRemaining"] = (
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: " + ", ".join(listed),
            )
        if by_finalizer:
            listed = sorted(f"{f} in {n} resource instances" for f, n in by_finalizer.items())
            wanted["NamespaceFinalizersRemaining"] = (
                "True",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: " + ", ".join(listed),
            )
        old = {c.get("type"): c for c in (ns.get("status") or {}).get("conditions") or []}
        conditions = []
        for kind, (status, reason, message) in wanted.items():
            was = old.get(kind) or {}
            since = was.get("lastTransitionTime") if was.get("status") == status else None
            conditions.append(
                {
                    "type": kind,
                    "status": status,
                    "lastTransitionTime": since or rfc3339(self.now()),
                    "reason": reason,
                    "message": message,
                }
            )
        if conditions == (ns.get("status") or {}).get("conditions"):
            return
        new = clone(ns)
        new.setdefault("status", {})["conditions"] = conditions
        new["metadata"].pop("resourceVersion", None)
        with contextlib.suppress(ApiError):
            self.store.update(NAMESPACES, new)

    def _stop_pod(self, pod: Obj) -> int:
        """Delete a pod as a DELETE through the API would (graceful when a kubelet runs it: the
        pod is Terminating until the kubelet removes it; finalizers still hold it); 1 while it is
        still there."""
        meta = pod["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        spec, phase = pod.get("spec") or {}, (pod.get("status") or {}).get("phase")
        try:
            if (
                not spec.get("nodeName")
                or phase in ("Succeeded", "Failed")
                or not meta.get("deletionTimestamp")
            ):
                delete_pod(self.store, self.store.get(PODS, ns, name) or pod)
        except ApiError:
            pass
        return 1 if self.store.get(PODS, ns, name) is not None else 0
