"""Deleting a pod the way the API server's pod strategy does (shared by the REST layer, the
eviction subresource and the controllers): a pod a kubelet runs is only *marked* —
``deletionTimestamp`` = now + grace period, ``deletionGracePeriodSeconds`` — and shows as
Terminating until its kubelet has stopped the containers and confirms; an unscheduled or finished
pod, or a grace period of 0, removes it at once."""

from __future__ import annotations

from typing import Any

from ...k8s.kinds import GroupResource
from .errors import bad_request
from .store import Obj, ObjectStore

PODS = GroupResource("", "pods")


def pod_grace_period(pod: Obj, opts: Obj) -> int:
    """The grace period a pod DELETE gets: the request's ``gracePeriodSeconds``, else
    ``spec.terminationGracePeriodSeconds`` (default 30); 0 for a pod no kubelet runs (unscheduled)
    or one already finished; a negative value means 1."""
    spec, phase = pod.get("spec") or {}, (pod.get("status") or {}).get("phase")
    raw = opts.get("gracePeriodSeconds")
    if raw is None:
        raw = spec.get("terminationGracePeriodSeconds", 30)
    try:
        grace = int(raw)
    except (TypeError, ValueError):
        raise bad_request(f'gracePeriodSeconds: Invalid value: "{raw}": must be an integer') from None
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    return 1 if grace < 0 else grace


def delete_pod(store: ObjectStore, pod: Obj, grace_seconds: Any = None) -> Obj:
    """DELETE ``pod`` without force (``grace_seconds`` None: the pod's own grace period)."""
    meta = pod["metadata"]
    opts = {} if grace_seconds is None else {"gracePeriodSeconds": grace_seconds}
    grace = pod_grace_period(pod, opts)
    if grace > 0:
        # the kubelet stops the containers (Killing), then deletes the pod for good
        return store.mark_deleted(PODS, meta.get("namespace", ""), meta["name"], grace)
    return store.delete(PODS, meta.get("namespace", ""), meta["name"])
