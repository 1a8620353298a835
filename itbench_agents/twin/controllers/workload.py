"""Helpers shared by the workload controllers: making pods from templates, ranking pods for
deletion, template hashes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...k8s.readiness import is_ready
from ...k8s.times import parse_rfc3339
from ..kube.store import clone
from .admission import admit
from .index import owner_ref
from .kinds import PODS

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

Obj = dict[str, Any]

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(s: str) -> str:
    """``k8s.io/apimachinery/pkg/util/rand.SafeEncodeString``."""
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in s)


def template_hash(template: Obj, collision_count: int | None = None) -> str:
    """A pod-template-hash: FNV-32a of the template (+ collision count), safe-encoded."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def pod_from_template(
    owner: Obj,
    api_version: str,
    kind: str,
    template: Obj,
    name: str,
    extra_labels: dict[str, str] | None = None,
) -> Obj:
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    labels.update(extra_labels or {})
    meta: Obj = {
        "name": name,
        "namespace": owner["metadata"].get("namespace", "default"),
        "labels": labels,
        "ownerReferences": [owner_ref(owner, api_version, kind)],
    }
    if kind != "StatefulSet":
        meta["generateName"] = owner["metadata"]["name"] + "-"
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": clone(template.get("spec") or {})}


def create_pod(twin: Twin, pod: Obj) -> Obj:
    """Admit and create a pod (raises ApiError from admission)."""
    pod = admit(twin, PODS, pod, "CREATE")
    return twin.store.create(PODS, pod)


def _ts(pod: Obj) -> float:
    try:
        return parse_rfc3339(pod["metadata"].get("creationTimestamp", "1970-01-01T00:00:00Z"))
    except (ValueError, KeyError):
        return 0.0


def deletion_rank(pod: Obj) -> tuple[Any, ...]:
    """Lower sorts first = deleted first (``controller.ActivePods`` ordering, simplified)."""
    status = pod.get("status", {})
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(status.get("phase", "Pending"), 0)
    restarts = sum(int(c.get("restartCount", 0)) for c in status.get("containerStatuses") or [])
    return (
        1 if pod.get("spec", {}).get("nodeName") else 0,
        phase_rank,
        1 if is_ready(pod) else 0,
        -restarts,
        -_ts(pod),
        pod["metadata"]["name"],
    )


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    for c in pod.get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("lastTransitionTime"):
            return bool(parse_rfc3339(c["lastTransitionTime"]) + min_ready_seconds <= now)
    return False


def service_account_of(workload: Obj) -> str:
    """The ServiceAccount the pods of ``workload`` (its pod template) run as."""
    spec = ((workload.get("spec") or {}).get("template") or {}).get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
