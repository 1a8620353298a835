"""PodDisruptionBudgets as the API server uses them: the eviction subresource's check-and-decrement
(``pkg/registry/core/pod/storage/eviction.go``) and the ``DisruptionAllowed`` condition both it and
the disruption controller (``controllers/disruption.py``) write (``pkg/apis/policy/helper``).

An eviction (``kubectl drain``, ``POST pods/NAME/eviction``):

- of a pod that is Pending, Succeeded, Failed or already being deleted is a plain delete;
- of a pod selected by more than one budget is refused with a 500 (upstream does not support it);
- of a pod that is not Ready, while the budget has its desired healthy pods, is a plain delete;
- otherwise needs ``status.disruptionsAllowed > 0`` on a budget whose status is current
  (``observedGeneration``): it is decremented and the pod noted in ``status.disruptedPods`` (the
  controller does not count it as healthy for :data:`DELETION_TIMEOUT_S`); at 0 the answer is
  429 ``TooManyRequests`` "Cannot evict pod as it would violate the pod's disruption budget." with
  a ``DisruptionBudget`` cause, which ``kubectl drain`` retries until its timeout.

A budget with a nil or empty selector protects no pod from eviction (upstream's guard), though the
controller counts every pod of the namespace for an empty one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...k8s.kinds import GroupResource
from ...k8s.readiness import is_ready
from ...k8s.selectors import matches
from ...k8s.times import rfc3339
from .errors import ApiError
from .store import ObjectStore, clone

Obj = dict[str, Any]

PDBS = GroupResource("policy", "poddisruptionbudgets")
DELETION_TIMEOUT_S = 120.0
"""How long an evicted pod is not counted as healthy while its deletion is awaited (upstream's
``DeletionTimeout``, 2 minutes)."""
MAX_DISRUPTED_PODS = 2000
"""``MaxDisruptedPodSize``: evictions the controller has not confirmed yet, at most."""
CONDITION = "DisruptionAllowed"


def set_condition(conditions: list[Obj], new: Obj, now: float) -> list[Obj]:
    """``apimeta.SetStatusCondition``: replace the condition of ``new``'s type, keeping its
    ``lastTransitionTime`` unless the status changed."""
    out: list[Obj] = []
    placed = False
    for c in conditions:
        if c.get("type") != new["type"]:
            out.append(c)
            continue
        placed = True
        when = c.get("lastTransitionTime") if c.get("status") == new["status"] else rfc3339(now)
        out.append(_condition(new, when or rfc3339(now)))
    if not placed:
        out.append(_condition(new, rfc3339(now)))
    return out


def _condition(new: Obj, when: str) -> Obj:
    cond: Obj = {"type": new["type"], "status": new["status"]}
    if new.get("observedGeneration"):
        cond["observedGeneration"] = new["observedGeneration"]
    cond.update(lastTransitionTime=when, reason=new["reason"], message=new.get("message", ""))
    return cond


def update_disruption_allowed(status: Obj, now: float) -> None:
    """``UpdateDisruptionAllowedCondition``: True ``SufficientPods`` while disruptions are allowed,
    else False ``InsufficientPods``."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    status["conditions"] = set_condition(
        list(status.get("conditions") or []),
        {
            "type": CONDITION,
            "status": "True" if allowed else "False",
            "reason": "SufficientPods" if allowed else "InsufficientPods",
            "observedGeneration": status.get("observedGeneration"),
        },
        now,
    )


def budgets_for(store: ObjectStore, pod: Obj) -> list[Obj]:
    """The budgets that guard ``pod`` against eviction (a nil or empty selector guards none)."""
    ns = pod["metadata"].get("namespace", "")
    out = []
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for pdb in store.list(PDBS, ns):
        sel = (pdb.get("spec") or {}).get("selector") or {}
        if (sel.get("matchLabels") or sel.get("matchExpressions")) and matches(sel, labels):
            out.append(pdb)
    return out


def _too_many_requests(message: str, retry_after: int = 0) -> ApiError:
    details: Obj = {"causes": [{"reason": "DisruptionBudget", "message": message}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return ApiError(
        429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.", details
    )


def check_eviction(store: ObjectStore, pod: Obj, now: float, dry_run: bool) -> None:
    """Raise what the API server answers when ``pod`` may not be evicted now; otherwise record the
    disruption on its budget (not for a dry run) and return: the caller deletes the pod."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Pending", "Succeeded", "Failed") or pod["metadata"].get("deletionTimestamp"):
        return  # canIgnorePDB
    pdbs = budgets_for(store, pod)
    if len(pdbs) > 1:
        raise ApiError(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        )
    if not pdbs:
        return
    pdb = pdbs[0]
    status = pdb.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    if not is_ready(pod) and int(status.get("currentHealthy") or 0) >= desired and desired > 0:
        return  # an unhealthy pod while the budget holds: it does not count
    name = pdb["metadata"]["name"]
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise _too_many_requests(f"The disruption budget {name} is still being processed by the server.", 10)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise _forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
        raise _forbidden(
            name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        )
    if allowed == 0:
        raise _too_many_requests(
            f"The disruption budget {name} needs {desired} healthy pods and has "
            f"{int(status.get('currentHealthy') or 0)} currently"
        )
    if dry_run:
        return
    _write_status(store, pdb, lambda st: _decrement(st, pod["metadata"]["name"], now))


def _decrement(status: Obj, pod_name: str, now: float) -> None:
    status["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) - 1
    if status["disruptionsAllowed"] == 0:
        update_disruption_allowed(status, now)
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: rfc3339(now)}


def _forbidden(name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'poddisruptionbudget.policy "{name}" is forbidden: {why}',
        {"name": name, "group": "policy", "kind": "poddisruptionbudget"},
    )


def _write_status(store: ObjectStore, pdb: Obj, mutate: Callable[[Obj], None]) -> None:
    status = clone(pdb.get("status") or {})
    mutate(status)
    meta = pdb["metadata"]
    store.update(
        PDBS,
        {"metadata": {"name": meta["name"], "namespace": meta.get("namespace", "")}, "status": status},
        status_only=True,
    )
