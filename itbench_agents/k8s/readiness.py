"""Readiness as Kubernetes decides it. Two questions, two names:

- :func:`is_ready` — ``IsPodReady`` (and a node's Ready): the first ``Ready`` condition is True.
  What ``kubectl get`` shows, what workload status counts (``readyReplicas``) and what a
  PodDisruptionBudget counts as healthy (which leaves Terminating pods out itself).
- :func:`serving` — ready and not being deleted: what the endpoints of a Service route to and
  what the twin's app model sends traffic to (a Terminating pod is taken out of rotation).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def is_ready(obj: Obj) -> bool:
    """Whether a pod's or node's (first) Ready condition is True."""
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def serving(pod: Obj) -> bool:
    """Ready and not Terminating (no ``deletionTimestamp``)."""
    return not pod.get("metadata", {}).get("deletionTimestamp") and is_ready(pod)
