"""The persistent-volume controller: binds claims to volumes.

- A claim binds to an Available PersistentVolume of its class with enough capacity and the access
  modes it asks for (smallest fit first), or to one whose ``claimRef`` already names it.
- A volume whose claim is gone becomes ``Released`` and keeps its stale ``claimRef`` (new claims
  with the same name do not get it: an admin must clear the ``claimRef``), unless its reclaim
  policy is Delete.
- With no fitting volume: classes with a dynamic provisioner get a new ``pvc-<uid>`` volume
  (``WaitForFirstConsumer`` classes only once a pod using the claim is scheduled); otherwise
  the claim stays Pending with the controller's events (FailedBinding, ProvisioningFailed,
  ExternalProvisioning, WaitForFirstConsumer), repeated every resync period.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ...k8s.quantity import parse_quantity
from ..kube.errors import ApiError
from ..kube.store import ChangeEvent
from .base import Controller, update_object, update_status
from .events import record_event
from .kinds import PERSISTENTVOLUMES, PODS, PVCS, STORAGECLASSES

Obj = dict[str, Any]

NO_PROVISIONER = "kubernetes.io/no-provisioner"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
RESYNC_S = 15.0


def default_class(store: Any) -> Obj | None:
    for sc in store.list(STORAGECLASSES):
        if (sc["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true":
            return sc  # type: ignore[no-any-return]
    return None


def claim_class(pvc: Obj) -> str:
    return str(pvc.get("spec", {}).get("storageClassName") or "")


def waits_for_consumer(store: Any, pvc: Obj) -> bool:
    """An unbound claim of a WaitForFirstConsumer class does not block scheduling."""
    sc = store.get(STORAGECLASSES, "", claim_class(pvc)) if claim_class(pvc) else None
    return bool(sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer")


class PersistentVolumeController(Controller):
    name = "persistentvolume-controller"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == PVCS:
            key = ("pvc", meta.get("namespace", ""), meta["name"])
            if ev.type == "DELETED":
                vol = ev.obj.get("spec", {}).get("volumeName")
                if vol:
                    self.enqueue(("pv", "", vol))
            else:
                self.enqueue(key)
        elif ev.gr == PERSISTENTVOLUMES:
            self.enqueue(("pv", "", meta["name"]))
            self.enqueue("pending")
        elif ev.gr == STORAGECLASSES:
            self.enqueue("pending")
        elif ev.gr == PODS and ev.type != "DELETED" and ev.obj.get("spec", {}).get("nodeName"):
            for vol in ev.obj.get("spec", {}).get("volumes") or []:
                claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
                if claim:
                    self.enqueue(("pvc", meta.get("namespace", ""), claim))

    def sync(self, key: Any) -> None:
        if key == "pending":
            for pvc in self.store.list(PVCS):
                if pvc.get("status", {}).get("phase") != "Bound":
                    self.enqueue(("pvc", pvc["metadata"]["namespace"], pvc["metadata"]["name"]))
            return
        kind, ns, name = key
        if kind == "pv":
            self._sync_volume(name)
        else:
            self._sync_claim(ns, name)

    # ------------------------------------------------------------------ volumes
    def _sync_volume(self, name: str) -> None:
        pv = self.store.get(PERSISTENTVOLUMES, "", name)
        if pv is None:
            return
        ref = pv.get("spec", {}).get("claimRef")
        phase = pv.get("status", {}).get("phase")
        if not ref:
            if phase != "Available":
                update_status(self.twin, PERSISTENTVOLUMES, pv, {"phase": "Available"})
            return
        pvc = self.store.get(PVCS, ref.get("namespace", ""), ref.get("name", ""))
        if pvc is not None and (not ref.get("uid") or ref.get("uid") == pvc["metadata"]["uid"]):
            if pvc.get("spec", {}).get("volumeName") == name and phase != "Bound":
                update_status(self.twin, PERSISTENTVOLUMES, pv, {"phase": "Bound"})
            return
        if not ref.get("uid"):
            # pre-bound to a claim that does not exist yet
            if phase != "Available":
                update_status(self.twin, PERSISTENTVOLUMES, pv, {"phase": "Available"})
            return
        policy = pv.get("spec", {}).get("persistentVolumeReclaimPolicy", "Retain")
        if policy == "Delete":
            with contextlib.suppress(ApiError):
                self.store.delete(PERSISTENTVOLUMES, "", name)
            return
        if phase != "Released":
            update_status(self.twin, PERSISTENTVOLUMES, pv, {"phase": "Released"})

    # ------------------------------------------------------------------ claims
    def _sync_claim(self, ns: str, name: str) -> None:
        pvc = self.store.get(PVCS, ns, name)
        if pvc is None or pvc.get("status", {}).get("phase") == "Bound":
            return
        pv = self._find_volume(pvc)
        if pv is not None:
            self._bind(pvc, pv, by_controller=not pvc.get("spec", {}).get("volumeName"))
            return
        cls = claim_class(pvc)
        sc = self.store.get(STORAGECLASSES, "", cls) if cls else None
        if not cls:
            self._pending(
                pvc,
                "Normal",
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            )
        elif sc is None:
            self._pending(
                pvc, "Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{cls}" not found'
            )
        elif sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not self._has_scheduled_consumer(pvc):
            self._pending(
                pvc,
                "Normal",
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            )
        elif sc.get("provisioner", NO_PROVISIONER) == NO_PROVISIONER:
            self._pending(
                pvc,
                "Normal",
                "ExternalProvisioning",
                f"Waiting for a volume to be created either by the external provisioner '{NO_PROVISIONER}' or "
                "manually by the system administrator. If volume creation is delayed, please verify that the "
                "provisioner is running and correctly registered.",
            )
        else:
            self._provision(pvc, sc)

    def _has_scheduled_consumer(self, pvc: Obj) -> bool:
        ns, name = pvc["metadata"]["namespace"], pvc["metadata"]["name"]
        for pod in self.index.pods_in(ns):
            if not pod.get("spec", {}).get("nodeName"):
                continue
            for vol in pod.get("spec", {}).get("volumes") or []:
                if (vol.get("persistentVolumeClaim") or {}).get("claimName") == name:
                    return True
        return False

    def _find_volume(self, pvc: Obj) -> Obj | None:
        spec = pvc.get("spec", {})
        ns, name, uid = pvc["metadata"]["namespace"], pvc["metadata"]["name"], pvc["metadata"]["uid"]
        want = parse_quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
        modes = set(spec.get("accessModes") or [])
        cls = claim_class(pvc)
        fits = []
        for pv in self.store.list(PERSISTENTVOLUMES):
            pspec = pv.get("spec", {})
            ref = pspec.get("claimRef")
            if spec.get("volumeName") and pv["metadata"]["name"] != spec["volumeName"]:
                continue
            if ref:
                if ref.get("namespace") != ns or ref.get("name") != name:
                    continue
                if ref.get("uid") and ref.get("uid") != uid:
                    continue  # a Released volume remembers its old claim
            elif pv.get("status", {}).get("phase") not in (None, "Available"):
                continue
            if str(pspec.get("storageClassName") or "") != cls:
                continue
            if not modes <= set(pspec.get("accessModes") or []):
                continue
            cap = parse_quantity((pspec.get("capacity") or {}).get("storage", "0"))
            if cap < want:
                continue
            fits.append((0 if ref else 1, cap, pv["metadata"]["name"], pv))
        if not fits:
            return None
        return min(fits, key=lambda f: f[:3])[3]

    def _bind(self, pvc: Obj, pv: Obj, by_controller: bool) -> None:
        meta = pvc["metadata"]

        def claim_ref(obj: Obj) -> None:
            obj["spec"]["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            if by_controller:
                obj["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"

        pv = update_object(self.twin, PERSISTENTVOLUMES, pv, claim_ref)
        update_status(self.twin, PERSISTENTVOLUMES, pv, {"phase": "Bound"})

        def volume_name(obj: Obj) -> None:
            obj["spec"]["volumeName"] = pv["metadata"]["name"]
            ann = obj["metadata"].setdefault("annotations", {})
            ann["pv.kubernetes.io/bind-completed"] = "yes"
            if by_controller:
                ann["pv.kubernetes.io/bound-by-controller"] = "yes"

        pvc = update_object(self.twin, PVCS, pvc, volume_name)
        update_status(
            self.twin,
            PVCS,
            pvc,
            {
                "phase": "Bound",
                "accessModes": list(pv.get("spec", {}).get("accessModes") or []),
                "capacity": dict(pv.get("spec", {}).get("capacity") or {}),
            },
        )

    def _provision(self, pvc: Obj, sc: Obj) -> None:
        spec = pvc.get("spec", {})
        name = f"pvc-{pvc['metadata']['uid']}"
        provisioner = str(sc.get("provisioner", ""))
        record_event(
            self.twin,
            pvc,
            "ExternalProvisioning",
            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by "
            "the system administrator. If volume creation is delayed, please verify that the provisioner is "
            "running and correctly registered.",
            component=self.name,
        )
        if self.store.get(PERSISTENTVOLUMES, "", name) is None:
            pv = {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": name,
                    "annotations": {"pv.kubernetes.io/provisioned-by": provisioner},
                    "finalizers": ["kubernetes.io/pv-protection"],
                },
                "spec": {
                    "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                    "capacity": {
                        "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
                    },
                    "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy", "Delete"),
                    "storageClassName": sc["metadata"]["name"],
                    "volumeMode": spec.get("volumeMode", "Filesystem"),
                    "hostPath": {
                        "path": f"/var/local-path-provisioner/{name}_{pvc['metadata']['namespace']}_{pvc['metadata']['name']}",
                        "type": "DirectoryOrCreate",
                    },
                },
            }
            created = self.store.create(PERSISTENTVOLUMES, pv)
            record_event(
                self.twin,
                pvc,
                "ProvisioningSucceeded",
                f"Successfully provisioned volume {name}",
                component=f"{provisioner}_local-path-provisioner",
            )
            fresh = self.store.get(PVCS, pvc["metadata"]["namespace"], pvc["metadata"]["name"])
            if fresh is not None:
                self._bind(fresh, created, by_controller=True)

    def _pending(self, pvc: Obj, type: str, reason: str, message: str) -> None:
        record_event(self.twin, pvc, reason, message, type=type, component=self.name)
        if pvc.get("status", {}).get("phase") != "Pending":
            update_status(self.twin, PVCS, pvc, {"phase": "Pending"})
        key = ("pvc", pvc["metadata"]["namespace"], pvc["metadata"]["name"])
        self.twin.scheduler.after(RESYNC_S, lambda: self._safe_sync(key), key=(self.name, "resync", key))
