"""Garbage collection and namespace lifecycle.

- Dependents whose owners (by ``ownerReferences`` uid) are all gone are deleted, cascading.
- ``foregroundDeletion`` / ``orphan`` finalizers on an owner being deleted are honoured.
- A namespace being deleted (``deletionTimestamp`` or phase Terminating) has everything inside
  removed, then disappears — unless finalizers of its own (``metadata.finalizers``) hold it: it
  stays Terminating until whoever set them removes them, as on a real cluster. A namespace removed
  outright takes its contents with it. (The contents' own finalizers are stripped, which a real
  cluster would wait for.)
- Pods go as a background-propagation DELETE sends them: bound, running pods get a grace period
  (``deletionTimestamp``, shown Terminating) and the kubelet removes them; a terminating namespace
  waits for them.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ...k8s.kinds import GroupResource
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent, clone
from .base import Controller
from .kinds import NAMESPACES, PODS

Obj = dict[str, Any]


class GarbageCollector(Controller):
    name = "garbage-collector"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        uid = meta.get("uid", "")
        if ev.type == "DELETED":
            if uid in self.index.dependents:
                self.enqueue(("orphans", uid))
            if ev.gr == NAMESPACES:
                self.enqueue(("ns", meta["name"]))
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
        kinds: list[GroupResource] = list(self.store.kinds())
        terminating = 0
        for gr in kinds:
            if gr == NAMESPACES:
                continue
            for obj in list(self.store.list(gr, name)):
                if not obj["metadata"].get("namespace"):
                    continue
                if gr == PODS and self.store.get(NAMESPACES, "", name) is not None:
                    # pods stop gracefully: the kubelet kills the containers and removes them
                    terminating += self._stop_pod(obj, strip_finalizers=True)
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
        ns = self.store.get(NAMESPACES, "", name)
        if ns is None:
            return
        if terminating:
            self.enqueue_at(self.now() + 1.0, ("ns", name))  # gone once its pods are
            return
        if ns["metadata"].get("finalizers"):
            return  # held until they are removed: the store then removes it
        with contextlib.suppress(ApiError):
            self.store.delete(NAMESPACES, "", name)

    def _stop_pod(self, pod: Obj, strip_finalizers: bool = False) -> int:
        """Delete a pod as a DELETE through the API would (graceful when a kubelet runs it: the
        pod is Terminating until the kubelet removes it; finalizers still hold it unless
        ``strip_finalizers``, as namespace teardown does); 1 while it is still there."""
        meta = pod["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        spec, phase = pod.get("spec") or {}, (pod.get("status") or {}).get("phase")
        try:
            if strip_finalizers and meta.get("finalizers"):
                new = clone(pod)
                new["metadata"].pop("finalizers")
                new["metadata"].pop("resourceVersion", None)
                self.store.update(PODS, new)
                if self.store.get(PODS, ns, name) is None:
                    return 0
            if (
                not spec.get("nodeName")
                or phase in ("Succeeded", "Failed")
                or not meta.get("deletionTimestamp")
            ):
                delete_pod(self.store, self.store.get(PODS, ns, name) or pod)
        except ApiError:
            pass
        return 1 if self.store.get(PODS, ns, name) is not None else 0
