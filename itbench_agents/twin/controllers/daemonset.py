"""DaemonSets: one pod per node that the pod's nodeSelector/affinity and the node's taints
allow; rolling updates replace one outdated pod at a time (``maxUnavailable`` 1)."""

from __future__ import annotations

from typing import Any

from ...k8s.readiness import is_ready
from ...k8s.selectors import labels_of, matches_map, node_selector_term_matches
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent
from .base import Controller, update_status
from .events import record_event
from .index import is_active
from .kinds import DAEMONSETS, NODES, PODS
from .podscheduler import _tolerates
from .statefulset import REVISION_LABEL, ensure_revision
from .workload import create_pod, pod_from_template

Obj = dict[str, Any]

DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


class DaemonSetController(Controller):
    name = "daemonset-controller"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == DAEMONSETS and ev.type != "DELETED":
            self.enqueue((meta.get("namespace", ""), meta["name"]))
        elif ev.gr == PODS:
            self.enqueue_owner(ev.obj, DAEMONSETS)
        elif ev.gr == NODES:
            for ds in self.store.list(DAEMONSETS):
                self.enqueue((ds["metadata"]["namespace"], ds["metadata"]["name"]))

    def _eligible(self, template: Obj, node: Obj) -> bool:
        spec = template.get("spec") or {}
        if spec.get("nodeSelector") and not matches_map(spec["nodeSelector"], labels_of(node)):
            return False
        req = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or {}
        terms = req.get("nodeSelectorTerms") or []
        if terms and not any(node_selector_term_matches(t, node) for t in terms):
            return False
        tol = list(spec.get("tolerations") or []) + DAEMON_TOLERATIONS
        for taint in node.get("spec", {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tol, taint):
                return False
        return True

    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        ds = self.store.get(DAEMONSETS, ns, name)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return
        template = ds.get("spec", {}).get("template") or {}
        rev, _ = ensure_revision(self, ds, "DaemonSet", template)
        pods = [p for p in self.index.owned(ds["metadata"]["uid"], PODS) if is_active(p)]
        by_node: dict[str, list[Obj]] = {}
        for p in pods:
            by_node.setdefault(_target_node(p), []).append(p)
        nodes = self.store.list(NODES)
        eligible = [n for n in nodes if self._eligible(template, n)]
        names = {n["metadata"]["name"] for n in eligible}
        for node in eligible:
            nname = node["metadata"]["name"]
            if by_node.get(nname):
                continue
            pod = pod_from_template(
                ds,
                "apps/v1",
                "DaemonSet",
                template,
                f"{name}-{self.store.random_suffix()}",
                {REVISION_LABEL: rev},
            )
            spec = pod["spec"]
            spec["tolerations"] = list(spec.get("tolerations") or []) + [dict(t) for t in DAEMON_TOLERATIONS]
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [nname]}]}
                        ]
                    }
                }
            }
            try:
                created = create_pod(self.twin, pod)
            except ApiError as e:
                record_event(
                    self.twin,
                    ds,
                    "FailedCreate",
                    f"Error creating: {e.message}",
                    type="Warning",
                    component=self.name,
                )
                continue
            record_event(
                self.twin,
                ds,
                "SuccessfulCreate",
                f"Created pod: {created['metadata']['name']}",
                component=self.name,
            )
        for nname, ps in by_node.items():
            doomed = ps[1:] if nname in names else ps
            for p in doomed:
                self._delete(ds, p)
        # rolling update, one at a time
        live = [p for n, ps in by_node.items() if n in names for p in ps[:1]]
        outdated = [p for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) != rev]
        if outdated and all(is_ready(p) for p in live):
            self._delete(ds, sorted(outdated, key=lambda p: p["metadata"]["name"])[0])
        ds = self.store.get(DAEMONSETS, ns, name)
        if ds is None:
            return
        pods = [p for p in self.index.owned(ds["metadata"]["uid"], PODS) if is_active(p)]
        scheduled = [p for p in pods if _target_node(p) in names]
        ready = sum(1 for p in scheduled if is_ready(p))
        updated = sum(1 for p in scheduled if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == rev)
        status = {
            "currentNumberScheduled": len({_target_node(p) for p in scheduled}),
            "desiredNumberScheduled": len(eligible),
            "numberMisscheduled": sum(1 for p in pods if _target_node(p) not in names),
            "numberReady": ready,
            "numberAvailable": ready,
            "updatedNumberScheduled": updated,
            "observedGeneration": ds["metadata"].get("generation", 1),
        }
        if len(eligible) - ready:
            status["numberUnavailable"] = len(eligible) - ready
        for k in ("numberAvailable", "updatedNumberScheduled"):
            if status[k] == 0:
                del status[k]
        update_status(self.twin, DAEMONSETS, ds, status)

    def _delete(self, ds: Obj, pod: Obj) -> None:
        try:
            delete_pod(self.store, pod)
        except ApiError:
            return
        record_event(
            self.twin, ds, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}", component=self.name
        )


def _target_node(pod: Obj) -> str:
    if pod.get("spec", {}).get("nodeName"):
        return str(pod["spec"]["nodeName"])
    terms = (
        ((pod.get("spec", {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for t in terms:
        for f in t.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("values"):
                return str(f["values"][0])
    return ""
