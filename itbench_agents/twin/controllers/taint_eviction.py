"""The taint eviction controller (kube-controller-manager's ``taint-eviction-controller``).

A pod bound to a node with a ``NoExecute`` taint it does not tolerate is deleted at once; one that
tolerates every such taint stays ``min(tolerationSeconds)`` of the matching tolerations (counted
from when the controller first saw it so), or for good when a matching toleration has no
``tolerationSeconds``. Removing the taint, or a toleration that now covers it for good, cancels a
pending eviction. Before deleting, the pod gets the ``DisruptionTarget`` condition (reason
``DeletionByTaintManager``) and a ``TaintManagerEviction`` event, as upstream writes them.

The node lifecycle controller's own ``not-ready`` and ``unreachable`` taints are left to it
(``cluster.py``: eviction after the default 300 s tolerations the admission adds), so this one
acts on the taints someone puts on a node (``kubectl taint nodes n key=value:NoExecute``).
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

from ...k8s.times import rfc3339
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent
from .base import Controller, update_status
from .events import record_event
from .index import is_terminal
from .kinds import NODES, PODS

Obj = dict[str, Any]

LIFECYCLE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
"""Evicted by the node lifecycle controller (``cluster.py``), not here."""


def no_execute_taints(node: Obj | None) -> list[Obj]:
    """The node's ``NoExecute`` taints this controller acts on."""
    taints = ((node or {}).get("spec") or {}).get("taints") or []
    return [t for t in taints if t.get("effect") == "NoExecute" and t.get("key") not in LIFECYCLE_TAINTS]


def toleration_matches(toleration: Obj, taint: Obj) -> bool:
    """``v1.Toleration.ToleratesTaint``: an empty effect or key matches any (with ``Exists``)."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def toleration_time(tolerations: list[Obj], taints: list[Obj]) -> float | None:
    """Seconds the pod may stay: ``None`` when some taint is not tolerated (evict now),
    ``math.inf`` when it may stay for good, else the least ``tolerationSeconds`` of the first
    toleration matching each taint (negative counts as 0), as ``GetMatchingTolerations`` and
    ``getMinTolerationTime`` decide."""
    least = math.inf
    for taint in taints:
        used = next((t for t in tolerations if toleration_matches(t, taint)), None)
        if used is None:
            return None
        secs = used.get("tolerationSeconds")
        if secs is not None:
            least = min(least, max(0.0, float(secs)))
    return least


def record_taint_eviction(twin: Any, pod: Obj) -> None:
    """The event upstream records on a pod it evicts for a ``NoExecute`` taint (this controller's
    and the node lifecycle controller's not-ready evictions)."""
    meta = pod["metadata"]
    record_event(
        twin,
        pod,
        "TaintManagerEviction",
        f"Marking for deletion Pod {meta.get('namespace', '')}/{meta['name']}",
        component=TaintEvictionController.name,
    )


class TaintEvictionController(Controller):
    name = "taint-eviction-controller"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._taints: dict[str, tuple[tuple[str, str, str], ...]] = {}
        """Per node: the (key, value, effect) of the NoExecute taints last seen."""
        self._scheduled: dict[str, tuple[float, float]] = {}
        """Per pod uid: (first seen tolerated, eviction time) of a pending eviction."""

    def on_change(self, ev: ChangeEvent) -> None:
        if ev.gr == NODES:
            name = ev.obj["metadata"]["name"]
            sig = tuple(
                (str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                for t in no_execute_taints(ev.obj)
            )
            if ev.type == "DELETED":
                self._taints.pop(name, None)
            elif sig != self._taints.get(name, ()):
                self._taints[name] = sig
                self.enqueue(name)
        elif ev.gr == PODS and ev.type != "DELETED":
            node = (ev.obj.get("spec") or {}).get("nodeName")
            if node and self._taints.get(node):
                self.enqueue(node)

    def sync(self, node_name: str) -> None:
        node = self.store.get(NODES, "", node_name)
        taints = no_execute_taints(node)
        now = self.now()
        for pod in self.index.pods_on(node_name):
            uid = pod["metadata"].get("uid", "")
            if is_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
                self._scheduled.pop(uid, None)
                continue
            stay = (
                toleration_time((pod.get("spec") or {}).get("tolerations") or [], taints)
                if taints
                else math.inf
            )
            if stay == math.inf:
                self._scheduled.pop(uid, None)  # cancels a pending eviction
                continue
            start = now if stay is None else self._scheduled.get(uid, (now, 0.0))[0]
            when = start + (stay or 0.0)
            if uid in self._scheduled and self._scheduled[uid][1] <= when:
                continue  # an earlier eviction is already due
            self._scheduled[uid] = (start, when)
            ref = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"], uid)
            self.twin.scheduler.at(
                when, functools.partial(self._evict, node_name, *ref), key=(self.name, "evict", uid)
            )

    def _evict(self, node_name: str, ns: str, name: str, uid: str) -> None:
        if uid not in self._scheduled:
            return  # cancelled
        del self._scheduled[uid]
        pod = self.store.get(PODS, ns, name)
        if (
            pod is None
            or pod["metadata"].get("uid") != uid
            or (pod.get("spec") or {}).get("nodeName") != node_name
        ):
            return
        if pod["metadata"].get("deletionTimestamp") or is_terminal(pod):
            return
        record_taint_eviction(self.twin, pod)
        status = dict(pod.get("status") or {})
        conds = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conds.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(self.now()),
                "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint",
            }
        )
        status["conditions"] = conds
        with contextlib.suppress(ApiError):
            pod = update_status(self.twin, PODS, pod, status)
            delete_pod(self.store, pod)
