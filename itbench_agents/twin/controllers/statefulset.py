"""StatefulSets (ordinal pods ``<sts>-<i>``, OrderedReady/Parallel, ControllerRevisions, PVCs from
volumeClaimTemplates, RollingUpdate from the highest ordinal) and DaemonSets (one pod per
eligible node)."""

from __future__ import annotations

from typing import Any

from ...k8s.readiness import is_ready
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent, clone
from .admission import admit
from .base import Controller, update_status
from .events import record_event
from .index import is_active, owner_ref
from .kinds import CONTROLLERREVISIONS, PODS, PVCS, SERVICEACCOUNTS, STATEFULSETS
from .workload import create_pod, pod_from_template, service_account_of, template_hash

Obj = dict[str, Any]

REVISION_LABEL = "controller-revision-hash"


def ensure_revision(ctrl: Controller, owner: Obj, kind: str, template: Obj) -> tuple[str, int]:
    """The ControllerRevision of ``template`` (created if new); returns (name, revision)."""
    ns, name, uid = owner["metadata"]["namespace"], owner["metadata"]["name"], owner["metadata"]["uid"]
    h = template_hash(template)
    rev_name = f"{name}-{h}"
    revs = ctrl.index.owned(uid, CONTROLLERREVISIONS)
    top = max((int(r.get("revision", 0)) for r in revs), default=0)
    existing = ctrl.store.get(CONTROLLERREVISIONS, ns, rev_name)
    if existing is not None:
        return rev_name, int(existing.get("revision", 0))
    obj = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": rev_name,
            "namespace": ns,
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
            "ownerReferences": [owner_ref(owner, "apps/v1", kind)],
        },
        "data": {"spec": {"template": {**clone(template), "$patch": "replace"}}},
        "revision": top + 1,
    }
    ctrl.store.create(CONTROLLERREVISIONS, obj)
    return rev_name, top + 1


class StatefulSetController(Controller):
    name = "statefulset-controller"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == STATEFULSETS and ev.type != "DELETED":
            self.enqueue((meta.get("namespace", ""), meta["name"]))
        elif ev.gr == PODS:
            self.enqueue_owner(ev.obj, STATEFULSETS)
        elif ev.gr == SERVICEACCOUNTS and ev.type == "ADDED":
            # a pod admission refused for want of its ServiceAccount can be made now
            ns = meta.get("namespace", "")
            for sts in self.store.list(STATEFULSETS, ns):
                if service_account_of(sts) == meta.get("name"):
                    self.enqueue((ns, sts["metadata"]["name"]))

    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        sts = self.store.get(STATEFULSETS, ns, name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec", {})
        template = spec.get("template") or {}
        rev, _ = ensure_revision(self, sts, "StatefulSet", template)
        replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        pods = {
            p["metadata"]["name"]: p for p in self.index.owned(sts["metadata"]["uid"], PODS) if is_active(p)
        }
        # create missing ordinals in order
        for i in range(replicas):
            pname = f"{name}-{i}"
            if pname in pods:
                if not parallel and not is_ready(pods[pname]):
                    break
                continue
            for vct in spec.get("volumeClaimTemplates") or []:
                claim = f"{vct['metadata']['name']}-{name}-{i}"
                if self.store.get(PVCS, ns, claim) is None:
                    pvc = {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "metadata": {
                            "name": claim,
                            "namespace": ns,
                            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                        },
                        "spec": clone(vct.get("spec") or {}),
                    }
                    try:
                        self.store.create(PVCS, admit(self.twin, PVCS, pvc, "CREATE"))
                    except ApiError as e:
                        record_event(
                            self.twin,
                            sts,
                            "FailedCreate",
                            f"create Claim {claim} for Pod {pname} in StatefulSet {name} failed error: {e.message}",
                            type="Warning",
                            component=self.name,
                        )
            pod = pod_from_template(
                sts,
                "apps/v1",
                "StatefulSet",
                template,
                pname,
                {
                    REVISION_LABEL: rev,
                    "statefulset.kubernetes.io/pod-name": pname,
                    "apps.kubernetes.io/pod-index": str(i),
                },
            )
            pod["spec"]["hostname"] = pname
            if spec.get("serviceName"):
                pod["spec"]["subdomain"] = spec["serviceName"]
            vols = pod["spec"].setdefault("volumes", [])
            for vct in spec.get("volumeClaimTemplates") or []:
                vname = vct["metadata"]["name"]
                if not any(v.get("name") == vname for v in vols):
                    vols.append(
                        {"name": vname, "persistentVolumeClaim": {"claimName": f"{vname}-{name}-{i}"}}
                    )
            if not vols:
                del pod["spec"]["volumes"]
            try:
                create_pod(self.twin, pod)
            except ApiError as e:
                record_event(
                    self.twin,
                    sts,
                    "FailedCreate",
                    f"create Pod {pname} in StatefulSet {name} failed error: {e.message}",
                    type="Warning",
                    component=self.name,
                )
                break
            record_event(
                self.twin,
                sts,
                "SuccessfulCreate",
                f"create Pod {pname} in StatefulSet {name} successful",
                component=self.name,
            )
            if not parallel:
                break
        # scale down from the highest ordinal
        extra = sorted(
            (p for n, p in pods.items() if _ordinal(n, name) >= replicas),
            key=lambda p: -_ordinal(p["metadata"]["name"], name),
        )
        for p in extra[: 1 if not parallel else len(extra)]:
            self._delete(sts, p)
        # rolling update: replace the highest-ordinal outdated pod once all are ready
        strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
        live = [p for n, p in pods.items() if _ordinal(n, name) < replicas]
        if (
            strategy == "RollingUpdate"
            and not extra
            and len(live) == replicas
            and all(is_ready(p) for p in live)
        ):
            partition = int(
                ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition", 0) or 0
            )
            outdated = sorted(
                (
                    p
                    for p in live
                    if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) != rev
                    and _ordinal(p["metadata"]["name"], name) >= partition
                ),
                key=lambda p: -_ordinal(p["metadata"]["name"], name),
            )
            if outdated:
                self._delete(sts, outdated[0])
        sts = self.store.get(STATEFULSETS, ns, name)
        if sts is None:
            return
        active = [p for p in self.index.owned(sts["metadata"]["uid"], PODS) if is_active(p)]
        updated = [p for p in active if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == rev]
        ready = sum(1 for p in active if is_ready(p))
        old = sts.get("status", {})
        current_rev = old.get("currentRevision") or rev
        if len(updated) == replicas and all(is_ready(p) for p in updated):
            current_rev = rev
        status = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(active),
            "readyReplicas": ready,
            "currentReplicas": sum(
                1 for p in active if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == current_rev
            ),
            "updatedReplicas": len(updated),
            "availableReplicas": ready,
            "currentRevision": current_rev,
            "updateRevision": rev,
            "collisionCount": 0,
        }
        for k in ("readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"):
            if status[k] == 0:
                del status[k]
        update_status(self.twin, STATEFULSETS, sts, status)

    def _delete(self, sts: Obj, pod: Obj) -> None:
        try:
            delete_pod(self.store, pod)
        except ApiError:
            return
        record_event(
            self.twin,
            sts,
            "SuccessfulDelete",
            f"delete Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']} successful",
            component=self.name,
        )


def _ordinal(pod_name: str, sts_name: str) -> int:
    try:
        return int(pod_name[len(sts_name) + 1 :])
    except ValueError:
        return -1
