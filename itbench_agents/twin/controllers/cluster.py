"""Small cluster-level controllers: default ServiceAccount and ``kube-root-ca.crt`` in every
namespace, node lifecycle (cordon → ``node.kubernetes.io/unschedulable`` taint and
NodeSchedulable events; NotReady → not-ready NoExecute taint and eviction after the pods'
toleration seconds), the kubelets' heartbeats (a Lease per node in ``kube-node-lease`` renewed
every 10 s, node conditions' ``lastHeartbeatTime`` posted every 5 min) and ResourceQuota status."""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from ...k8s.quantity import format_quantity
from ...k8s.readiness import is_ready
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent, clone
from .admission import namespace_usage
from .base import Controller, update_object, update_status
from .bootstrap import default_service_account, root_ca_configmap
from .events import micro_time, record_event
from .index import is_terminal
from .kinds import (
    CONFIGMAPS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    RESOURCEQUOTAS,
    SERVICEACCOUNTS,
)
from .taint_eviction import record_taint_eviction

Obj = dict[str, Any]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


class ServiceAccountController(Controller):
    name = "serviceaccount-controller"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == NAMESPACES and ev.type != "DELETED":
            self.enqueue(meta["name"])
        elif ev.gr in (SERVICEACCOUNTS, CONFIGMAPS) and ev.type == "DELETED":
            self.enqueue(meta.get("namespace", ""))

    def sync(self, ns: str) -> None:
        nso = self.store.get(NAMESPACES, "", ns)
        if (
            nso is None
            or nso["metadata"].get("deletionTimestamp")
            or nso.get("status", {}).get("phase") == "Terminating"
        ):
            return
        if nso.get("status", {}).get("phase") != "Active":
            new = clone(nso)
            new.setdefault("status", {})["phase"] = "Active"
            update_status(self.twin, NAMESPACES, nso, new["status"])
        if self.store.get(SERVICEACCOUNTS, ns, "default") is None:
            self.store.create(SERVICEACCOUNTS, default_service_account(ns))
        if self.store.get(CONFIGMAPS, ns, "kube-root-ca.crt") is None:
            self.store.create(CONFIGMAPS, root_ca_configmap(ns))


class NodeLifecycleController(Controller):
    name = "node-controller"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._cordoned: dict[str, bool] = {}

    def on_change(self, ev: ChangeEvent) -> None:
        if ev.gr == NODES and ev.type != "DELETED":
            self.enqueue(ev.obj["metadata"]["name"])

    def sync(self, name: str) -> None:
        node = self.store.get(NODES, "", name)
        if node is None:
            return
        cordoned = bool(node.get("spec", {}).get("unschedulable"))
        ready = is_ready(node)

        def mutate(obj: Obj) -> None:
            taints = [
                t
                for t in obj["spec"].get("taints") or []
                if t.get("key") not in (UNSCHEDULABLE_TAINT, NOT_READY_TAINT)
            ]
            old = {(t.get("key"), t.get("effect")): t for t in obj["spec"].get("taints") or []}
            wanted = []
            if cordoned:
                wanted.append((UNSCHEDULABLE_TAINT, "NoSchedule"))
            if not ready:
                # TaintNodesByCondition (NoSchedule) and the eviction taint (NoExecute)
                wanted += [(NOT_READY_TAINT, "NoSchedule"), (NOT_READY_TAINT, "NoExecute")]
            for key, effect in wanted:
                t = old.get((key, effect)) or {"key": key, "effect": effect}
                if (effect == "NoExecute" or key == UNSCHEDULABLE_TAINT) and "timeAdded" not in t:
                    t = {**t, "timeAdded": _ts(self)}
                taints.append(t)
            if taints:
                obj["spec"]["taints"] = taints
            else:
                obj["spec"].pop("taints", None)

        update_object(self.twin, NODES, node, mutate)
        prev = self._cordoned.get(name)
        if prev is not None and prev != cordoned:
            status = "NodeNotSchedulable" if cordoned else "NodeSchedulable"
            record_event(
                self.twin,
                node,
                status,
                f"Node {name} status is now: {status}",
                component="kubelet",
                host=name,
            )
        self._cordoned[name] = cordoned
        if not ready:
            self._evict(name)

    def _evict(self, node: str) -> None:
        now = self.now()
        for pod in self.index.pods_on(node):
            if is_terminal(pod):
                continue
            secs = None
            for t in pod.get("spec", {}).get("tolerations") or []:
                if (
                    t.get("key") in (NOT_READY_TAINT, None, "")
                    and t.get("effect") in ("NoExecute", None, "")
                    and (t.get("operator") == "Exists" or t.get("key") == NOT_READY_TAINT)
                ):
                    secs = t.get("tolerationSeconds", -1)
                    break
            if secs == -1:
                continue
            delay = 0.0 if secs is None else float(secs)
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"])
            self.twin.scheduler.at(
                now + delay, functools.partial(self._evict_one, node, *key), key=(self.name, "evict", key)
            )

    def _evict_one(self, node: str, ns: str, name: str, uid: str) -> None:
        nobj = self.store.get(NODES, "", node)
        pod = self.store.get(PODS, ns, name)
        if nobj is None or is_ready(nobj) or pod is None or pod["metadata"]["uid"] != uid:
            return
        record_taint_eviction(self.twin, pod)
        with contextlib.suppress(ApiError):
            delete_pod(self.store, pod)  # Terminating: the node's kubelet cannot confirm while it is away


def _ts(c: Controller) -> str:
    from ...k8s.times import rfc3339

    return rfc3339(c.now())


LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_S = 40
LEASE_RENEW_S = 10.0
"""The kubelet renews its node Lease every 0.25 × ``leaseDurationSeconds`` (40 s)."""
QUIET_LEASE_RENEW_S = 6 * 3600.0
"""How often node Leases are renewed while ``Twin.for_app`` builds a long pre-history (more than a
day), until ``twin.quiet_until``. Nothing in the twin reads a Lease's history, no client watches it
then, and renewing every 10 s would write 26,000 versions a day into the store log (every 10
minutes, as before, was 3,000 writes of a FinOps week's three nodes)."""
NODE_STATUS_REPORT_S = 300.0
"""``--node-status-report-frequency``: with leases, the kubelet posts an unchanged node status
(fresh ``lastHeartbeatTime``) every 5 minutes."""
QUIET_NODE_STATUS_REPORT_S = 6 * 3600.0
"""How often node statuses are posted in a quiet pre-history (as :data:`QUIET_LEASE_RENEW_S`; nothing
reads a heartbeat time, and the node lifecycle controller ignores heartbeats)."""


def heartbeat_every(twin: Any, loud_s: float, quiet_s: float) -> float:
    """Seconds to a kubelet's next heartbeat: ``loud_s``, or ``quiet_s`` while the twin builds a
    quiet pre-history — never past its end (``twin.quiet_until``), so that the last, loud part of
    the past starts with fresh heartbeats at the kubelet's own rate."""
    until = getattr(twin, "quiet_until", None)
    now = twin.now()
    if until is None or now >= until:
        return loud_s
    return min(quiet_s, until - now)


class NodeHeartbeat(Controller):
    """What each node's kubelet posts while it runs: its Lease and its conditions' heartbeat times.
    A node whose Ready condition is not True is treated as a kubelet that stopped posting (its
    Lease goes stale), so a node a fault took down is never revived here. The writes are routine
    (``Index.routine``): no controller and not the behaviour model react to them."""

    name = "kubelet-heartbeat"

    def on_change(self, ev: ChangeEvent) -> None:
        if ev.gr == NODES and ev.type == "ADDED":
            name = ev.obj["metadata"]["name"]
            self.twin.scheduler.soon(lambda: self._renew(name), key=(self.name, "lease", name))
            self.twin.scheduler.after(
                NODE_STATUS_REPORT_S, lambda: self._report(name), key=(self.name, "status", name)
            )

    def _renew(self, name: str) -> None:
        node = self.store.get(NODES, "", name)
        if node is None:
            return  # the garbage collector removes the Lease with its owner
        every = heartbeat_every(self.twin, LEASE_RENEW_S, QUIET_LEASE_RENEW_S)
        self.twin.scheduler.after(every, lambda: self._renew(name), key=(self.name, "lease", name))
        if not is_ready(node):
            return
        lease = self.store.get(LEASES, LEASE_NAMESPACE, name)
        now = micro_time(self.now())
        if lease is None:
            with contextlib.suppress(ApiError):
                self.store.create(
                    LEASES,
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {
                            "name": name,
                            "namespace": LEASE_NAMESPACE,
                            "ownerReferences": [
                                {
                                    "apiVersion": "v1",
                                    "kind": "Node",
                                    "name": name,
                                    "uid": node["metadata"]["uid"],
                                }
                            ],
                        },
                        "spec": {
                            "holderIdentity": name,
                            "leaseDurationSeconds": LEASE_DURATION_S,
                            "renewTime": now,
                        },
                    },
                )
            return

        def mutate(obj: Obj) -> None:
            obj.setdefault("spec", {})["renewTime"] = now

        update_object(self.twin, LEASES, lease, mutate)

    def _report(self, name: str) -> None:
        node = self.store.get(NODES, "", name)
        if node is None:
            return
        every = heartbeat_every(self.twin, NODE_STATUS_REPORT_S, QUIET_NODE_STATUS_REPORT_S)
        self.twin.scheduler.after(every, lambda: self._report(name), key=(self.name, "status", name))
        if not is_ready(node):
            return
        ts = _ts(self)
        status = clone(node.get("status") or {})
        for c in status.get("conditions") or []:
            c["lastHeartbeatTime"] = ts
        update_status(self.twin, NODES, node, status)


class QuotaController(Controller):
    name = "resourcequota-controller"

    def on_change(self, ev: ChangeEvent) -> None:
        ns = ev.obj.get("metadata", {}).get("namespace", "")
        if (
            ev.gr == RESOURCEQUOTAS
            and ev.type != "DELETED"
            or ns
            and ev.gr.resource != "events"
            and self.store.list(RESOURCEQUOTAS, ns)
        ):
            self.enqueue(ns)

    def sync(self, ns: str) -> None:
        for q in self.store.list(RESOURCEQUOTAS, ns):
            hard = dict(q.get("spec", {}).get("hard") or {})
            used = namespace_usage(self.twin, ns, q)
            status = {
                "hard": hard,
                "used": {r: format_quantity(used.get(r, 0.0), str(hard[r])) for r in hard},
            }
            update_status(self.twin, RESOURCEQUOTAS, q, status)
