"""The ReplicaSet controller: keep ``spec.replicas`` pods of the template alive.

Pods are named ``<rs>-<5 chars>``, owned by the ReplicaSet (``controller: true``) and admitted
like API creates, so ResourceQuota/LimitRange rejections (and a missing ServiceAccount) show up as
``FailedCreate`` events on the ReplicaSet and a ``ReplicaFailure`` condition, retried with the
workqueue's exponential back-off, and at once when a quota, LimitRange or ServiceAccount changes.
"""

from __future__ import annotations

import functools
from typing import Any

from ...k8s.readiness import is_ready
from ...k8s.times import rfc3339
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent
from .base import Controller, update_status
from .events import record_event
from .index import is_active
from .kinds import LIMITRANGES, PODS, REPLICASETS, RESOURCEQUOTAS, SERVICEACCOUNTS
from .workload import create_pod, deletion_rank, is_available, pod_from_template, service_account_of

Obj = dict[str, Any]

SLOW_START_INITIAL = 1
BACKOFF_BASE_S = 0.005
BACKOFF_MAX_S = 1000.0


class ReplicaSetController(Controller):
    name = "replicaset-controller"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._failures: dict[str, int] = {}
        self._seen_gen: dict[str, int] = {}

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == REPLICASETS:
            uid = meta.get("uid", "")
            if ev.type == "DELETED":
                self._failures.pop(uid, None)
                self._seen_gen.pop(uid, None)
                self.twin.scheduler.cancel((self.name, "retry", uid))
                return
            gen = int(meta.get("generation", 1) or 1)
            if self._seen_gen.get(uid) != gen:  # our own status writes do not re-trigger a sync
                self._seen_gen[uid] = gen
                self.enqueue((meta.get("namespace", ""), meta["name"]))
        elif ev.gr == PODS:
            self.enqueue_owner(ev.obj, REPLICASETS)
        elif ev.gr in (RESOURCEQUOTAS, LIMITRANGES) or (ev.gr == SERVICEACCOUNTS and ev.type == "ADDED"):
            # what admission refused may pass now (a quota raised, the pods' ServiceAccount back)
            ns = meta.get("namespace", "")
            for rs in self.store.list(REPLICASETS, ns):
                if rs["metadata"]["uid"] in self._failures and (
                    ev.gr != SERVICEACCOUNTS or service_account_of(rs) == meta.get("name")
                ):
                    self.enqueue((ns, rs["metadata"]["name"]))

    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        rs = self.store.get(REPLICASETS, ns, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        uid = rs["metadata"]["uid"]
        pods = [p for p in self.index.owned(uid, PODS) if is_active(p)]
        want = int(rs.get("spec", {}).get("replicas", 1))
        diff = want - len(pods)
        failure: str | None = None
        if diff > 0:
            failure = self._create(rs, diff)
        elif diff < 0:
            for pod in sorted(pods, key=deletion_rank)[:-diff]:
                try:
                    delete_pod(self.store, pod)
                except ApiError:
                    continue
                record_event(
                    self.twin,
                    rs,
                    "SuccessfulDelete",
                    f"Deleted pod: {pod['metadata']['name']}",
                    component=self.name,
                )
        rs = self.store.get(REPLICASETS, ns, name)
        if rs is None:
            return
        pods = [p for p in self.index.owned(uid, PODS) if is_active(p)]
        self._write_status(rs, pods, failure)

    def _create(self, rs: Obj, count: int) -> str | None:
        """Create ``count`` pods in slow-start batches; returns the first failure message."""
        uid = rs["metadata"]["uid"]
        template = rs.get("spec", {}).get("template") or {}
        batch = SLOW_START_INITIAL
        remaining = count
        while remaining > 0:
            n = min(batch, remaining)
            for _ in range(n):
                pod = pod_from_template(
                    rs,
                    "apps/v1",
                    "ReplicaSet",
                    template,
                    rs["metadata"]["name"] + "-" + self.store.random_suffix(),
                )
                try:
                    created = create_pod(self.twin, pod)
                except ApiError as e:
                    msg = f"Error creating: {e.message}"
                    record_event(self.twin, rs, "FailedCreate", msg, type="Warning", component=self.name)
                    fails = self._failures.get(uid, 0)
                    self._failures[uid] = fails + 1
                    delay = min(BACKOFF_BASE_S * (2 ** min(fails, 40)), BACKOFF_MAX_S)
                    key = (rs["metadata"].get("namespace", ""), rs["metadata"]["name"])
                    self.twin.scheduler.after(
                        delay, functools.partial(self._safe_sync, key), key=(self.name, "retry", uid)
                    )
                    return msg
                record_event(
                    self.twin,
                    rs,
                    "SuccessfulCreate",
                    f"Created pod: {created['metadata']['name']}",
                    component=self.name,
                )
            remaining -= n
            batch *= 2
        self._failures.pop(uid, None)
        return None

    def _write_status(self, rs: Obj, pods: list[Obj], failure: str | None) -> None:
        now = self.now()
        mrs = int(rs.get("spec", {}).get("minReadySeconds", 0) or 0)
        tmpl_labels = (rs.get("spec", {}).get("template", {}).get("metadata") or {}).get("labels") or {}
        status: Obj = {
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(
                1
                for p in pods
                if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in tmpl_labels.items())
            ),
            "readyReplicas": sum(1 for p in pods if is_ready(p)),
            "availableReplicas": sum(1 for p in pods if is_available(p, mrs, now)),
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if mrs > 0 and status["readyReplicas"] > status["availableReplicas"]:
            self.enqueue_at(now + 1.0, (rs["metadata"]["namespace"], rs["metadata"]["name"]))
        old_conds = rs.get("status", {}).get("conditions") or []
        conds = [c for c in old_conds if c.get("type") != "ReplicaFailure"]
        if failure is not None:
            prev = next((c for c in old_conds if c.get("type") == "ReplicaFailure"), None)
            conds.append(
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": prev["lastTransitionTime"] if prev else rfc3339(now),
                    "reason": "FailedCreate",
                    "message": failure.removeprefix("Error creating: "),
                }
            )
        elif rs["metadata"]["uid"] in self._failures:
            conds = old_conds  # still failing, keep the condition until a create succeeds
        if conds:
            status["conditions"] = conds
        for k in ("readyReplicas", "availableReplicas", "fullyLabeledReplicas"):
            if status[k] == 0 and k != "fullyLabeledReplicas":
                del status[k]
        update_status(self.twin, REPLICASETS, rs, status)
