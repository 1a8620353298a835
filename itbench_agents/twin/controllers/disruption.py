"""The disruption controller (kube-controller-manager's ``disruption``): PodDisruptionBudget status.

For each budget it counts the pods its selector picks in its namespace (an empty selector: all of
them; a nil one: none) and writes, as ``pkg/controller/disruption/disruption.go`` does:

- ``expectedPods``: the pods themselves for an integer ``minAvailable``; otherwise the summed scale
  (``spec.replicas``) of the pods' controllers — a Deployment through its ReplicaSet, a bare
  ReplicaSet, a StatefulSet, a ReplicationController. A pod with no controller is skipped with an
  ``UnmanagedPods`` warning; a controller without a scale subresource (DaemonSet, Job) or one that
  is gone fails the sync (the fail-safe: ``disruptionsAllowed`` 0, condition ``SyncFailed``).
- ``desiredHealthy``: ``minAvailable``, or ``expectedPods - maxUnavailable`` (at least 0),
  percentages of ``expectedPods`` rounded up.
- ``currentHealthy``: Ready pods not being deleted and not evicted within the last
  :data:`~..kube.pdb.DELETION_TIMEOUT_S` (``disruptedPods``, written by the eviction subresource).
- ``disruptionsAllowed``: ``currentHealthy - desiredHealthy``, 0 when negative or when no pod is
  expected; the ``DisruptionAllowed`` condition; ``observedGeneration``.

It listens to budgets and pods only, like upstream: a scale change shows up through the pods it
makes or removes. Events are recorded as the controller manager records them (``NoPods``,
``UnmanagedPods``, ``CalculateExpectedPodCountFailed``).
"""

from __future__ import annotations

import math
from typing import Any

from ...k8s.kinds import GroupResource
from ...k8s.readiness import is_ready
from ...k8s.selectors import labels_of, matches
from ...k8s.times import parse_rfc3339
from ..kube.pdb import CONDITION, DELETION_TIMEOUT_S, PDBS, set_condition, update_disruption_allowed
from ..kube.store import ChangeEvent
from .base import Controller, update_status
from .events import record_event
from .kinds import DEPLOYMENTS, PODS, REPLICASETS, REPLICATIONCONTROLLERS, STATEFULSETS

Obj = dict[str, Any]

COMPONENT = "controllermanager"
"""The event source upstream's disruption controller records with."""
SCALED_KINDS: dict[tuple[str, str], GroupResource] = {
    ("", "ReplicationController"): REPLICATIONCONTROLLERS,
    ("apps", "ReplicaSet"): REPLICASETS,
    ("extensions", "ReplicaSet"): REPLICASETS,
    ("apps", "Deployment"): DEPLOYMENTS,
    ("apps", "StatefulSet"): STATEFULSETS,
}
UNSCALED = {"DaemonSet": "daemonsets.apps", "Job": "jobs.batch", "CronJob": "cronjobs.batch", "Node": "nodes"}


class SyncFailed(Exception):
    """What upstream's ``trySync`` returns as an error (the budget gets the fail-safe status)."""


class DisruptionController(Controller):
    name = "disruption"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._selectors: dict[str, dict[str, Obj | None]] = {}
        """Per namespace, per budget: its selector (which pods wake it)."""

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj["metadata"]
        ns = meta.get("namespace", "")
        if ev.gr == PDBS:
            if ev.type == "DELETED":
                self._selectors.get(ns, {}).pop(meta["name"], None)
                return
            self._selectors.setdefault(ns, {})[meta["name"]] = (ev.obj.get("spec") or {}).get("selector")
            self.enqueue((ns, meta["name"]))
        elif ev.gr == PODS:
            labels = labels_of(ev.obj)
            for name, sel in self._selectors.get(ns, {}).items():
                if matches(sel, labels):
                    self.enqueue((ns, name))

    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        pdb = self.store.get(PDBS, ns, name)
        if pdb is None:
            return
        try:
            self._try_sync(pdb)
        except SyncFailed as e:
            self._fail_safe(pdb, str(e))

    # ------------------------------------------------------------------ trySync
    def _try_sync(self, pdb: Obj) -> None:
        ns = pdb["metadata"].get("namespace", "")
        pods = self.index.pods_matching(ns, (pdb.get("spec") or {}).get("selector"))
        if not pods:
            self._event(pdb, "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = self._expected_count(pdb, pods)
        except SyncFailed as e:
            self._event(
                pdb,
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {e}",
                "Warning",
            )
            raise
        if unmanaged:
            self._event(
                pdb,
                "UnmanagedPods",
                "Pods selected by this PodDisruptionBudget (selector: "
                f"{go_label_selector((pdb.get('spec') or {}).get('selector'))}) were found to be unmanaged. "
                "As a result, the status of the PDB cannot be calculated correctly, which may result in "
                'undefined behavior. To account for these pods please set ".spec.minAvailable" field of '
                "the PDB to an integer value.",
                "Warning",
            )
        now = self.now()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now)
        healthy = sum(
            1
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
            and not _recently_disrupted(disrupted.get(p["metadata"]["name"]), now)
            and is_ready(p)
        )
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        old = pdb.get("status") or {}
        status: Obj = {}
        generation = pdb["metadata"].get("generation")
        if generation:
            status["observedGeneration"] = generation
        if disrupted:
            status["disruptedPods"] = disrupted
        status.update(
            disruptionsAllowed=allowed,
            currentHealthy=healthy,
            desiredHealthy=desired,
            expectedPods=expected,
        )
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        update_disruption_allowed(status, now)
        update_status(self.twin, PDBS, pdb, status)
        if recheck is not None:
            self.enqueue_at(recheck, (ns, pdb["metadata"]["name"]))

    def _expected_count(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int, list[str]]:
        spec = pdb.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = self._expected_scale(pods)
            max_unavailable = scaled_value(spec["maxUnavailable"], expected)
            return expected, max(0, expected - max_unavailable), unmanaged
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return len(pods), min_available, []
        if isinstance(min_available, str):
            expected, unmanaged = self._expected_scale(pods)
            return expected, scaled_value(min_available, expected), unmanaged
        return 0, 0, []

    def _expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        """The summed scale of the pods' controllers, and the pods that have none."""
        scale: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = _controller_ref(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scale:
                continue
            found = self._find_scale(ref, pod["metadata"].get("namespace", ""))
            if found is None:
                raise SyncFailed(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scale[found[0]] = found[1]
        return sum(scale.values()), unmanaged

    def _find_scale(self, ref: Obj, ns: str) -> tuple[str, int] | None:
        """``finders()``: (uid, replicas) of the controller ``ref`` names, through a ReplicaSet to
        its Deployment; None when it is gone."""
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        kind = str(ref.get("kind", ""))
        target = SCALED_KINDS.get((group, kind))
        if target is None:
            resource = UNSCALED.get(kind, f"{kind.lower()}s{'.' + group if group else ''}")
            raise SyncFailed(f"{resource} does not implement the scale subresource")
        obj = self.index.get_ref((target, ns, str(ref.get("name", ""))))
        if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
            return None
        if target == REPLICASETS:
            owner = _controller_ref(obj)
            if owner is not None and owner.get("kind") == "Deployment":
                dep = self.index.get_ref((DEPLOYMENTS, ns, str(owner.get("name", ""))))
                if dep is None or dep["metadata"].get("uid") != owner.get("uid"):
                    return None
                obj = dep
        return obj["metadata"]["uid"], _replicas(obj)

    def _disrupted_pods(self, pdb: Obj, pods: list[Obj], now: float) -> tuple[Obj, float | None]:
        """``buildDisruptedPodMap``: evictions still awaited, and when to look again."""
        noted = (pdb.get("status") or {}).get("disruptedPods") or {}
        out: Obj = {}
        recheck: float | None = None
        for pod in pods:
            name = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp") or name not in noted:
                continue
            due = parse_rfc3339(noted[name]) + DELETION_TIMEOUT_S
            if due <= now:  # upstream: Before(now); on a virtual clock, at `due` time has come
                self._event(
                    pod,
                    "NotDeleted",
                    # upstream prints the budget's namespace twice
                    f"Pod was expected by PDB {pdb['metadata'].get('namespace', '')}/"
                    f"{pdb['metadata'].get('namespace', '')} to be deleted but it wasn't",
                    "Warning",
                )
                continue
            out[name] = noted[name]
            recheck = due if recheck is None else min(recheck, due)
        return out, recheck

    def _fail_safe(self, pdb: Obj, why: str) -> None:
        status = dict(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        status["conditions"] = set_condition(
            list(status.get("conditions") or []),
            {
                "type": CONDITION,
                "status": "False",
                "reason": "SyncFailed",
                "message": why,
                "observedGeneration": status.get("observedGeneration"),
            },
            self.now(),
        )
        update_status(self.twin, PDBS, pdb, status)

    def _event(self, obj: Obj, reason: str, message: str, type: str = "Normal") -> None:
        record_event(self.twin, obj, reason, message, type=type, component=COMPONENT)


def scaled_value(value: int | str, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent`` rounding up."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if not text.endswith("%") or not text[:-1].lstrip("-").isdigit():
        raise SyncFailed("invalid value for IntOrString: invalid type: string is not a percentage")
    return math.ceil(int(text[:-1]) * total / 100)


def go_label_selector(sel: Obj | None) -> str:
    """A LabelSelector as Go's ``%v`` prints it (the generated ``String()``)."""
    if sel is None:
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted((sel.get("matchLabels") or {}).items()))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in sel.get("matchExpressions") or []
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )


def _controller_ref(obj: Obj) -> Obj | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def _recently_disrupted(when: str | None, now: float) -> bool:
    return when is not None and parse_rfc3339(when) + DELETION_TIMEOUT_S > now


def _replicas(obj: Obj) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)
