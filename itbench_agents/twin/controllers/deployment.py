"""The Deployment controller: ReplicaSets per pod template, rolling updates, history, status.

Follows ``pkg/controller/deployment``: the new ReplicaSet is the one whose template equals the
Deployment's (ignoring ``pod-template-hash``), revisions live in
``deployment.kubernetes.io/revision`` (re-used templates get the next revision and remember old
ones in ``revision-history``), RollingUpdate honours maxSurge/maxUnavailable, Recreate scales the
old ReplicaSets down first, and the Progressing/Available conditions carry the real reasons
(NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
ProgressDeadlineExceeded, DeploymentPaused/Resumed) so ``kubectl rollout status/undo/history``
behave as on a real cluster.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from ...k8s.times import parse_rfc3339, rfc3339
from ..kube.errors import ApiError
from ..kube.store import ChangeEvent, clone
from .base import Controller, update_object, update_status
from .events import record_event
from .index import controller_uid, is_terminal, owner_ref
from .kinds import DEPLOYMENTS, PODS, REPLICASETS
from .workload import template_hash

Obj = dict[str, Any]

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
HASH_LABEL = "pod-template-hash"
_SKIP_ANNOTATIONS = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
}


def semantic(value: Any) -> Any:
    """Drop nulls and empty maps/lists, as Kubernetes' semantic equality treats them as unset
    (kubectl sends ``creationTimestamp: null`` and ``resources: {}`` in templates)."""
    if isinstance(value, dict):
        out = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def _strip_hash(template: Obj) -> Obj:
    t = clone(template)
    labels = (t.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(HASH_LABEL, None)
    return semantic(t)  # type: ignore[no-any-return]


def _int_or_percent(value: Any, total: int, round_up: bool, default: str) -> int:
    v = default if value is None else value
    if isinstance(v, str) and v.endswith("%"):
        frac = float(v[:-1]) * total / 100.0
        return math.ceil(frac) if round_up else math.floor(frac)
    return int(v)


def _revision(rs: Obj) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _replicas(rs: Obj) -> int:
    return int(rs.get("spec", {}).get("replicas", 0) or 0)


def _neg_ts(ts: str) -> tuple[int, ...]:
    """Sort key that puts later RFC 3339 timestamps first."""
    return tuple(-ord(c) for c in ts)


def _status_int(obj: Obj, key: str) -> int:
    return int(obj.get("status", {}).get(key, 0) or 0)


class DeploymentController(Controller):
    name = "deployment-controller"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._rs_templates: dict[tuple[str, str], Obj] = {}

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == DEPLOYMENTS and ev.type != "DELETED":
            self.enqueue((meta.get("namespace", ""), meta["name"]))
        elif ev.gr == REPLICASETS:
            self.enqueue_owner(ev.obj, DEPLOYMENTS)
        elif ev.gr == PODS and ev.type == "DELETED":
            # a Recreate rollout waits for the old pods to be gone, not just Terminating
            ref = self.index.by_uid.get(controller_uid(ev.obj) or "")
            rs = self.store.get(*ref) if ref is not None and ref[0] == REPLICASETS else None
            if rs is not None:
                self.enqueue_owner(rs, DEPLOYMENTS)

    def _rs_template(self, rs: Obj) -> Obj:
        """A ReplicaSet's pod template without its hash label, as :func:`semantic` has it; kept per
        stored version (every sync compares each of the Deployment's ReplicaSets)."""
        meta = rs["metadata"]
        key = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))
        if not all(key):  # not a stored object: nothing to key it by
            return _strip_hash(rs["spec"].get("template") or {})
        got = self._rs_templates.get(key)
        if got is None:
            if len(self._rs_templates) > 4096:
                self._rs_templates.clear()
            got = self._rs_templates[key] = _strip_hash(rs["spec"].get("template") or {})
        return got

    # ------------------------------------------------------------------ sync
    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        d = self.store.get(DEPLOYMENTS, ns, name)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return
        spec = d.get("spec", {})
        all_rs = sorted(
            self.index.owned(d["metadata"]["uid"], REPLICASETS),
            key=lambda r: (r["metadata"].get("creationTimestamp", ""), r["metadata"]["name"]),
        )
        template = semantic(spec.get("template") or {})
        new_rs = next((r for r in all_rs if self._rs_template(r) == template), None)
        old_rs = [r for r in all_rs if r is not new_rs]

        replicas0 = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        if spec.get("paused") or self._is_scaling_event(new_rs, old_rs, replicas0):
            if new_rs is not None:
                new_rs = self._ensure_new_rs_annotations(d, new_rs, old_rs, scale_annotations=False)
            self._scale_proportionally(d, new_rs, old_rs, replicas0)
            fresh = self.store.get(DEPLOYMENTS, ns, name)
            if fresh is not None:
                self._write_status(
                    fresh,
                    self._refresh(new_rs) if new_rs else None,
                    [self._refresh(r) for r in old_rs],
                    False,
                )
            return
        created = False
        if new_rs is None:
            new_rs = self._create_new_rs(d, old_rs)
            created = new_rs is not None
        else:
            new_rs = self._ensure_new_rs_annotations(d, new_rs, old_rs)
        if new_rs is None:
            return
        strategy = (spec.get("strategy") or {}).get("type", "RollingUpdate")
        replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        if strategy == "Recreate":
            self._rollout_recreate(d, new_rs, old_rs, replicas)
        else:
            self._rollout_rolling(d, new_rs, old_rs, replicas)
        self._cleanup(d, old_rs)
        d = self.store.get(DEPLOYMENTS, ns, name)
        if d is None:
            return
        self._write_status(d, self._refresh(new_rs), [self._refresh(r) for r in old_rs], created)

    def _refresh(self, rs: Obj) -> Obj:
        return self.store.get(REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"]) or rs

    # ------------------------------------------------------------------ replica sets
    def _create_new_rs(self, d: Obj, old_rs: list[Obj]) -> Obj | None:
        spec = d["spec"]
        collision = int(d.get("status", {}).get("collisionCount", 0) or 0)
        h = template_hash(semantic(spec.get("template") or {}), collision)
        template = clone(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = clone(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        max_rev = max((_revision(r) for r in old_rs), default=0)
        replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        annotations = {
            k: v for k, v in (d["metadata"].get("annotations") or {}).items() if k not in _SKIP_ANNOTATIONS
        }
        annotations[REVISION] = str(max_rev + 1)
        annotations[DESIRED_REPLICAS] = str(replicas)
        annotations[MAX_REPLICAS] = str(replicas + self._max_surge(d, replicas))
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{d['metadata']['name']}-{h}",
                "namespace": d["metadata"]["namespace"],
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [owner_ref(d, "apps/v1", "Deployment")],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": int(spec.get("minReadySeconds", 0) or 0),
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = self.store.create(REPLICASETS, rs)
        except ApiError as e:
            if e.code != 409:
                raise
            # hash collision with a ReplicaSet of another template: bump collisionCount, retry later
            status = clone(d.get("status", {}))
            status["collisionCount"] = collision + 1
            update_status(self.twin, DEPLOYMENTS, d, status)
            return None
        self._set_deployment_revision(d, str(max_rev + 1))
        return created

    def _ensure_new_rs_annotations(
        self, d: Obj, rs: Obj, old_rs: list[Obj], scale_annotations: bool = True
    ) -> Obj:
        max_old = max((_revision(r) for r in old_rs), default=0)
        cur = _revision(rs)
        replicas = int(d["spec"].get("replicas", 1) if d["spec"].get("replicas") is not None else 1)

        def mutate(obj: Obj) -> None:
            ann = obj["metadata"].setdefault("annotations", {})
            for k, v in (d["metadata"].get("annotations") or {}).items():
                if k not in _SKIP_ANNOTATIONS:
                    ann[k] = v
            if cur <= max_old:
                history = [h for h in ann.get(REVISION_HISTORY, "").split(",") if h]
                if cur > 0:
                    history.append(str(cur))
                ann[REVISION_HISTORY] = ",".join(history)
                ann[REVISION] = str(max_old + 1)
            if scale_annotations:
                ann[DESIRED_REPLICAS] = str(replicas)
                ann[MAX_REPLICAS] = str(replicas + self._max_surge(d, replicas))

        rs = update_object(self.twin, REPLICASETS, rs, mutate)
        self._set_deployment_revision(d, str(_revision(rs)))
        return rs

    def _set_deployment_revision(self, d: Obj, rev: str) -> None:
        fresh = self.store.get(DEPLOYMENTS, d["metadata"]["namespace"], d["metadata"]["name"])
        if fresh is None or (fresh["metadata"].get("annotations") or {}).get(REVISION) == rev:
            return

        def mutate(obj: Obj) -> None:
            obj["metadata"].setdefault("annotations", {})[REVISION] = rev

        update_object(self.twin, DEPLOYMENTS, fresh, mutate)

    def _scale(self, d: Obj, rs: Obj, to: int) -> Obj:
        """``scaleReplicaSet``: writes the size and the desired/max-replicas annotations when either
        is stale (a ReplicaSet whose size is right but whose annotations still carry the previous
        Deployment size would make every later sync look like a scaling event, and the rollout
        would never go on); the ScalingReplicaSet event only when the size changed."""
        frm = _replicas(rs)
        replicas = int(d["spec"].get("replicas", 1) if d["spec"].get("replicas") is not None else 1)
        desired, max_replicas = str(replicas), str(replicas + self._max_surge(d, replicas))
        ann0 = rs["metadata"].get("annotations") or {}
        if frm == to and ann0.get(DESIRED_REPLICAS) == desired and ann0.get(MAX_REPLICAS) == max_replicas:
            return rs

        def mutate(obj: Obj) -> None:
            obj["spec"]["replicas"] = to
            ann = obj["metadata"].setdefault("annotations", {})
            ann[DESIRED_REPLICAS] = desired
            ann[MAX_REPLICAS] = max_replicas

        out = update_object(self.twin, REPLICASETS, rs, mutate)
        if frm == to:
            return out
        verb = "up" if to > frm else "down"
        record_event(
            self.twin,
            d,
            "ScalingReplicaSet",
            f"Scaled {verb} replica set {rs['metadata']['name']} from {frm} to {to}",
            component=self.name,
        )
        return out

    # ------------------------------------------------------------------ strategies
    def _max_surge(self, d: Obj, replicas: int) -> int:
        strategy = d["spec"].get("strategy") or {}
        if strategy.get("type") == "Recreate":
            return 0
        ru = strategy.get("rollingUpdate") or {}
        surge = _int_or_percent(ru.get("maxSurge"), replicas, True, "25%")
        unavailable = _int_or_percent(ru.get("maxUnavailable"), replicas, False, "25%")
        if surge == 0 and unavailable == 0:
            return 0
        return surge

    def _max_unavailable(self, d: Obj, replicas: int) -> int:
        strategy = d["spec"].get("strategy") or {}
        if strategy.get("type") == "Recreate" or replicas == 0:
            return 0
        ru = strategy.get("rollingUpdate") or {}
        surge = _int_or_percent(ru.get("maxSurge"), replicas, True, "25%")
        unavailable = _int_or_percent(ru.get("maxUnavailable"), replicas, False, "25%")
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return min(unavailable, replicas)

    def _rollout_rolling(self, d: Obj, new_rs: Obj, old_rs: list[Obj], replicas: int) -> None:
        active_old = [r for r in old_rs if _replicas(r) > 0]
        if not active_old and _replicas(new_rs) != replicas:
            # nothing to roll: plain scaling
            self._scale(d, new_rs, replicas)
            return
        # reconcile new RS
        cur_new = _replicas(new_rs)
        if cur_new > replicas:
            new_rs = self._scale(d, new_rs, replicas)
        elif cur_new < replicas:
            max_total = replicas + self._max_surge(d, replicas)
            current = cur_new + sum(_replicas(r) for r in old_rs)
            if current < max_total:
                scale_up = min(max_total - current, replicas - cur_new)
                new_rs = self._scale(d, new_rs, cur_new + scale_up)
        # reconcile old RSs
        old_rs = [self._refresh(r) for r in old_rs]
        old_count = sum(_replicas(r) for r in old_rs)
        if old_count == 0:
            return
        all_count = old_count + _replicas(new_rs)
        min_available = replicas - self._max_unavailable(d, replicas)
        new_unavailable = _replicas(new_rs) - _status_int(new_rs, "availableReplicas")
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return
        # first get rid of unhealthy old replicas
        cleaned = 0
        for rs in sorted(old_rs, key=lambda r: r["metadata"].get("creationTimestamp", "")):
            if cleaned >= max_scaled_down:
                break
            unhealthy = _replicas(rs) - _status_int(rs, "availableReplicas")
            if unhealthy <= 0:
                continue
            n = min(max_scaled_down - cleaned, unhealthy)
            self._scale(d, rs, _replicas(rs) - n)
            cleaned += n
        old_rs = [self._refresh(r) for r in old_rs]
        new_rs = self._refresh(new_rs)
        available = sum(_status_int(r, "availableReplicas") for r in old_rs) + _status_int(
            new_rs, "availableReplicas"
        )
        if available <= min_available:
            return
        total = min(available - min_available, max_scaled_down - cleaned)
        for rs in sorted(old_rs, key=lambda r: r["metadata"].get("creationTimestamp", "")):
            if total <= 0:
                break
            if _replicas(rs) == 0:
                continue
            n = min(_replicas(rs), total)
            self._scale(d, rs, _replicas(rs) - n)
            total -= n

    def _rollout_recreate(self, d: Obj, new_rs: Obj, old_rs: list[Obj], replicas: int) -> None:
        for rs in old_rs:
            if _replicas(rs) > 0:
                self._scale(d, rs, 0)
        # wait until old pods are gone (Terminating ones still run: deployment_controller's oldPodsRunning)
        for rs in old_rs:
            if _status_int(self._refresh(rs), "replicas") > 0:
                return
            if any(not is_terminal(p) for p in self.index.owned(rs["metadata"]["uid"], PODS)):
                return
        if _replicas(new_rs) != replicas:
            self._scale(d, new_rs, replicas)

    @staticmethod
    def _is_scaling_event(new_rs: Obj | None, old_rs: list[Obj], replicas: int) -> bool:
        for rs in ([new_rs] if new_rs else []) + old_rs:
            if _replicas(rs) <= 0:
                continue
            desired = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
            if desired is not None and desired.isdigit() and int(desired) != replicas:
                return True
        return False

    def _scale_proportionally(self, d: Obj, new_rs: Obj | None, old_rs: list[Obj], replicas: int) -> None:
        """``deployment_controller.scale``: one active ReplicaSet takes the new size; a saturated new one
        lets the old ones go; otherwise the change is shared out in proportion to their sizes."""
        all_rs = ([new_rs] if new_rs else []) + old_rs
        active = [r for r in all_rs if _replicas(r) > 0]
        if len(active) <= 1:
            target = active[0] if active else (new_rs or (max(old_rs, key=_revision) if old_rs else None))
            if target is not None and _replicas(target) != replicas:
                self._scale(d, target, replicas)
            return
        if new_rs is not None and self._saturated(new_rs, replicas):
            for rs in old_rs:
                if _replicas(rs) > 0:
                    self._scale(d, rs, 0)
            return
        if ((d["spec"].get("strategy") or {}).get("type") or "RollingUpdate") != "RollingUpdate":
            return
        allowed = replicas + self._max_surge(d, replicas) if replicas > 0 else 0
        to_add = allowed - sum(_replicas(r) for r in active)
        if to_add == 0:
            for rs in active:
                self._scale(d, rs, _replicas(rs))
            return
        created = {id(r): r["metadata"].get("creationTimestamp", "") for r in active}
        if to_add > 0:  # larger first, newer first among equals
            active.sort(key=lambda r: (-_replicas(r), _neg_ts(created[id(r)])))
        else:  # larger first, older first among equals
            active.sort(key=lambda r: (-_replicas(r), created[id(r)]))
        added = 0
        sizes = []
        for rs in active:
            prop = self._proportion(d, rs, replicas, to_add, added)
            sizes.append(_replicas(rs) + prop)
            added += prop
        sizes[0] = max(0, sizes[0] + to_add - added)  # leftovers go to the largest
        for rs, size in zip(active, sizes, strict=True):
            self._scale(d, rs, size)

    def _saturated(self, rs: Obj, replicas: int) -> bool:
        desired = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
        return (
            _replicas(rs) == replicas
            and desired == str(replicas)
            and _status_int(rs, "availableReplicas") == replicas
        )

    def _proportion(self, d: Obj, rs: Obj, replicas: int, to_add: int, added: int) -> int:
        if _replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        if replicas == 0:
            fraction = -_replicas(rs)
        else:
            total = replicas + self._max_surge(d, replicas)
            ann = (rs["metadata"].get("annotations") or {}).get(MAX_REPLICAS)
            annotated = int(ann) if ann and ann.isdigit() else _status_int(d, "replicas")
            fraction = (
                int(math.floor(_replicas(rs) * total / annotated + 0.5)) - _replicas(rs) if annotated else 0
            )
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    def _cleanup(self, d: Obj, old_rs: list[Obj]) -> None:
        limit = d["spec"].get("revisionHistoryLimit")
        limit = 10 if limit is None else int(limit)
        dead = [
            r
            for r in (self._refresh(x) for x in old_rs)
            if _replicas(r) == 0
            and _status_int(r, "replicas") == 0
            and not r["metadata"].get("deletionTimestamp")
        ]
        dead.sort(key=_revision)
        for rs in dead[: max(0, len(dead) - limit)]:
            with contextlib.suppress(ApiError):
                self.store.delete(REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"])

    # ------------------------------------------------------------------ status
    def _write_status(self, d: Obj, new_rs: Obj | None, old_rs: list[Obj], created: bool) -> None:
        now = self.now()
        ts = rfc3339(now)
        spec = d["spec"]
        replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        all_rs = ([new_rs] if new_rs else []) + old_rs
        st: Obj = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": sum(_status_int(r, "replicas") for r in all_rs),
            "updatedReplicas": _status_int(new_rs, "replicas") if new_rs else 0,
            "readyReplicas": sum(_status_int(r, "readyReplicas") for r in all_rs),
            "availableReplicas": sum(_status_int(r, "availableReplicas") for r in all_rs),
        }
        st["unavailableReplicas"] = max(0, replicas - st["availableReplicas"])
        old_status = d.get("status", {})
        if old_status.get("collisionCount"):
            st["collisionCount"] = old_status["collisionCount"]
        conds = {c["type"]: c for c in old_status.get("conditions") or []}

        def set_cond(ctype: str, status: str, reason: str, message: str, update_time: bool = True) -> None:
            prev = conds.get(ctype)
            c = {
                "type": ctype,
                "status": status,
                "lastUpdateTime": ts,
                "lastTransitionTime": ts,
                "reason": reason,
                "message": message,
            }
            if prev is not None and prev.get("status") == status:
                c["lastTransitionTime"] = prev.get("lastTransitionTime", ts)
                if prev.get("reason") == reason and prev.get("message") == message:
                    c["lastUpdateTime"] = prev.get("lastUpdateTime", ts) if not update_time else ts
            conds[ctype] = c

        # Available
        max_unavail = self._max_unavailable(d, replicas)
        if st["availableReplicas"] >= replicas - max_unavail:
            set_cond(
                "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", False
            )
        else:
            set_cond(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                False,
            )
        # Progressing
        deadline = spec.get("progressDeadlineSeconds", 600)
        rs_name = new_rs["metadata"]["name"] if new_rs else ""
        prog = conds.get("Progressing")
        if spec.get("paused"):
            if prog is None or prog.get("reason") != "DeploymentPaused":
                set_cond("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
        elif prog is not None and prog.get("reason") == "DeploymentPaused":
            set_cond("Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed")
        elif new_rs is not None:
            complete = (
                st["updatedReplicas"] == replicas
                and st["replicas"] == replicas
                and st["availableReplicas"] == replicas
            )
            old = old_status
            progressing = (
                st["updatedReplicas"] > int(old.get("updatedReplicas", 0) or 0)
                or st["replicas"] < int(old.get("replicas", 0) or 0)
                or st["readyReplicas"] > int(old.get("readyReplicas", 0) or 0)
                or st["availableReplicas"] > int(old.get("availableReplicas", 0) or 0)
            )
            if complete:
                if prog is None or prog.get("reason") != "NewReplicaSetAvailable":
                    set_cond(
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        f'ReplicaSet "{rs_name}" has successfully progressed.',
                    )
            elif created:
                set_cond(
                    "Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{rs_name}"'
                )
            elif prog is None or f'"{rs_name}"' not in (prog.get("message") or ""):
                set_cond("Progressing", "True", "FoundNewReplicaSet", f'Found new replica set "{rs_name}"')
            elif progressing:
                set_cond(
                    "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{rs_name}" is progressing.'
                )
            elif deadline is not None and prog.get("reason") not in (
                "NewReplicaSetAvailable",
                "ProgressDeadlineExceeded",
            ):
                last = parse_rfc3339(prog.get("lastUpdateTime") or ts)
                if now >= last + int(deadline):
                    set_cond(
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        f'ReplicaSet "{rs_name}" has timed out progressing.',
                    )
                else:
                    self.enqueue_at(last + int(deadline), (d["metadata"]["namespace"], d["metadata"]["name"]))
        # ReplicaFailure mirrors the ReplicaSets'
        failure = None
        for r in all_rs:
            for c in r.get("status", {}).get("conditions") or []:
                if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
                    failure = c
        if failure is not None:
            set_cond(
                "ReplicaFailure",
                "True",
                failure.get("reason", "FailedCreate"),
                failure.get("message", ""),
                False,
            )
        else:
            conds.pop("ReplicaFailure", None)
        order = {"Available": 0, "Progressing": 1, "ReplicaFailure": 2}
        st["conditions"] = sorted(conds.values(), key=lambda c: order.get(c["type"], 9))
        for k in ("readyReplicas", "availableReplicas", "unavailableReplicas", "updatedReplicas", "replicas"):
            if st.get(k) == 0:
                del st[k]
        update_status(self.twin, DEPLOYMENTS, d, st)
