"""Benign look-alikes of fault signatures, planned by :mod:`churn` like any other benign change.

Issue 12 ("SRE benchmark validity"): an agent that blames whatever *looks* like a fault — any
Chaos Mesh object, any feature flag that is on, any object created after the app, any failed pod —
must meet those signatures on healthy clusters too. Each look-alike is harmless by construction
and is a plain Kubernetes API object (the same plan runs on a live cluster):

``chaos-recovered``  a 60 s NetworkChaos drill (20 ms delay) on an unrelated workload, run before
                     the fault and long finished when the agent looks (``AllRecovered``)
``chaos-paused``     a weekly PodChaos ``Schedule`` for game days, paused: it spawns nothing
``flag-on``          a new product feature flag, on, in the flagd ConfigMap; no service reads it
``cronjob``          a housekeeping CronJob (busybox, every 5 minutes) whose runs complete
``job-failed``       a one-off Job left behind that failed before the fault, long enough before it
                     that its ``FailedPodsDetected`` alert already fires at the baseline: chronic
                     noise, "alerts are firing but nothing is wrong"

A maker returns a :class:`Lookalike` or, when it cannot be used for the scenario, the reason.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..k8s.client import KubeApi, KubeApiError
from ..scenario.spec import CreateOp, Operation, PatchOp, Target

CHAOS_API = "chaos-mesh.org/v1alpha1"
DRILL_S = 60.0
DRILL_GAP_S = 105.0
"""Twin seconds the drill needs before the fault (60 s of delay, then recovery and a quiet window)."""
FAILED_JOB_GAP_S = 210.0
"""Twin seconds between the failed Job and the fault: its pod fails within seconds and the alert's
``for: 2m`` has passed, so the alert is already firing at the baseline."""
FLAGD_CONFIGMAP, FLAGD_KEY = "flagd-config", "demo.flagd.json"
NEW_FLAGS = ("checkoutNewAddressForm", "productCatalogSortByRating", "recommendationCarouselV2")
"""Flags no service of the demo reads (a product team's feature toggles)."""
BUSYBOX = "busybox:1.36"


@dataclass
class Lookalike:
    kind: str
    target: str
    """``namespace/Kind/name`` of the object created or changed."""
    ops: list[Operation]
    detail: str
    min_gap_s: float = 0.0
    """Twin seconds that must pass after it before the fault (phase ``before`` only)."""
    alert_owner: str | None = None
    """Name prefix of the pods whose alerts it raises on purpose (chronic noise)."""
    before_only: bool = False


@dataclass
class LookalikeContext:
    rng: random.Random
    namespace: str
    api: KubeApi
    pool: Sequence[dict[str, Any]]
    """Workloads the change may name (outside the fault's footprint, not infrastructure)."""
    protected_objects: set[str]
    creates_pods_ok: bool
    """Whether new pods are harmless here (not when placement or quotas are part of the fault)."""


def _key(kind: str, ns: str, name: str) -> str:
    return f"{ns}/{kind}/{name}"


def serves(api: KubeApi, api_version: str, kind: str, ns: str) -> bool:
    """Whether the cluster serves ``kind`` (a CRD may be absent: no Chaos Mesh installed)."""
    try:
        api.list(api_version, kind, ns)
    except KubeApiError:
        return False
    return True


def _labels(dep: dict[str, Any]) -> dict[str, str]:
    return dict(((dep.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})


def _pick(ctx: LookalikeContext) -> dict[str, Any] | str:
    pool = [d for d in ctx.pool if _labels(d)]
    if not pool:
        return "no eligible workload with a matchLabels selector"
    return ctx.rng.choice(list(pool))


def _selector(ctx: LookalikeContext, dep: dict[str, Any]) -> dict[str, Any]:
    return {"namespaces": [ctx.namespace], "labelSelectors": _labels(dep)}


def _chaos_target(ctx: LookalikeContext, kind: str) -> dict[str, Any] | str:
    """The workload a chaos look-alike of ``kind`` names, or why there is none."""
    if not serves(ctx.api, CHAOS_API, kind, ctx.namespace):
        return "the cluster does not serve chaos-mesh.org"
    return _pick(ctx)


def chaos_recovered(ctx: LookalikeContext) -> Lookalike | str:
    dep = _chaos_target(ctx, "NetworkChaos")
    if isinstance(dep, str):
        return dep
    target = dep["metadata"]["name"]
    name = f"latency-drill-{target}"
    obj = {
        "apiVersion": CHAOS_API,
        "kind": "NetworkChaos",
        "metadata": {"name": name, "namespace": ctx.namespace},
        "spec": {
            "action": "delay",
            "mode": "one",
            "selector": _selector(ctx, dep),
            "delay": {"latency": "20ms"},
            "duration": f"{int(DRILL_S)}s",
        },
    }
    return Lookalike(
        "chaos-recovered", _key("NetworkChaos", ctx.namespace, name), [CreateOp(op="create", object=obj)],
        f"a {int(DRILL_S)} s NetworkChaos drill (20 ms delay) on {target}, recovered before the fault",
        min_gap_s=DRILL_GAP_S, before_only=True,
    )  # fmt: skip


def chaos_paused(ctx: LookalikeContext) -> Lookalike | str:
    dep = _chaos_target(ctx, "Schedule")
    if isinstance(dep, str):
        return dep
    target = dep["metadata"]["name"]
    name = f"gameday-{target}-pod-kill"
    obj = {
        "apiVersion": CHAOS_API,
        "kind": "Schedule",
        "metadata": {
            "name": name,
            "namespace": ctx.namespace,
            "annotations": {"experiment.chaos-mesh.org/pause": "true"},
        },
        "spec": {
            "schedule": ctx.rng.choice(("0 3 * * 6", "30 2 * * 0", "0 4 * * 3")),
            "type": "PodChaos",
            "historyLimit": 1,
            "concurrencyPolicy": "Forbid",
            "podChaos": {"action": "pod-kill", "mode": "one", "selector": _selector(ctx, dep)},
        },
    }
    return Lookalike(
        "chaos-paused", _key("Schedule", ctx.namespace, name), [CreateOp(op="create", object=obj)],
        f"a paused weekly PodChaos Schedule (game day) for {target}",
    )  # fmt: skip


def flag_on_spec(description: str) -> dict[str, Any]:
    """A flagd boolean flag that is on."""
    return {
        "description": description,
        "state": "ENABLED",
        "variants": {"on": True, "off": False},
        "defaultVariant": "on",
    }


def flag_on(ctx: LookalikeContext) -> Lookalike | str:
    key = _key("ConfigMap", ctx.namespace, FLAGD_CONFIGMAP)
    if key in ctx.protected_objects:
        return "the scenario's operations change the flag file"
    try:
        cm = next(
            c
            for c in ctx.api.list("v1", "ConfigMap", ctx.namespace)
            if c["metadata"]["name"] == FLAGD_CONFIGMAP
        )
        doc = json.loads((cm.get("data") or {})[FLAGD_KEY])
        flags = doc["flags"]
        assert isinstance(flags, dict)
    except (KubeApiError, StopIteration, KeyError, TypeError, ValueError, AssertionError):
        return f"no flagd flag file ({FLAGD_CONFIGMAP}/{FLAGD_KEY})"
    names = [f for f in NEW_FLAGS if f not in flags]
    if not names:
        return "every look-alike flag already exists"
    flag = ctx.rng.choice(names)
    flags[flag] = flag_on_spec("Product team feature toggle (no service reads it yet)")
    target = Target(apiVersion="v1", kind="ConfigMap", name=FLAGD_CONFIGMAP, namespace=ctx.namespace)
    patch = {"data": {FLAGD_KEY: json.dumps(doc, indent=2)}}
    return Lookalike(
        "flag-on", key, [PatchOp(op="patch", target=target, type="merge", patch=patch)],
        f"new feature flag {flag}=on in {FLAGD_CONFIGMAP} (no service reads it)",
    )  # fmt: skip


def _pod_spec(script: str, restart: str) -> dict[str, Any]:
    return {
        "restartPolicy": restart,
        "containers": [
            {
                "name": "task",
                "image": BUSYBOX,
                "command": ["sh", "-c", script],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "16Mi"},
                    "limits": {"cpu": "50m", "memory": "32Mi"},
                },
            }
        ],
    }


def cronjob(ctx: LookalikeContext) -> Lookalike | str:
    if not ctx.creates_pods_ok:
        return "new pods could change the fault (placement or quotas are part of it)"
    name = ctx.rng.choice(("cache-report", "orders-housekeeping", "log-rotate-check"))
    obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": ctx.namespace},
        "spec": {
            "schedule": "*/5 * * * *",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 2,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 1,
                    "template": {"spec": _pod_spec(f"echo '{name}: done'; sleep 2", "OnFailure")},
                }
            },
        },
    }
    return Lookalike(
        "cronjob", _key("CronJob", ctx.namespace, name), [CreateOp(op="create", object=obj)],
        f"a housekeeping CronJob {name} (every 5 min, its runs complete)",
    )  # fmt: skip


def job_failed(ctx: LookalikeContext) -> Lookalike | str:
    if not ctx.creates_pods_ok:
        return "new pods could change the fault (placement or quotas are part of it)"
    name = ctx.rng.choice(("backfill-ratings", "migrate-legacy-carts", "export-audit-2026"))
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ctx.namespace},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": _pod_spec(f"echo '{name}: source table not found' >&2; exit 1", "Never")},
        },
    }
    return Lookalike(
        "job-failed", _key("Job", ctx.namespace, name), [CreateOp(op="create", object=obj)],
        f"a one-off Job {name} that failed long before the fault (its alert fires at the baseline)",
        min_gap_s=FAILED_JOB_GAP_S, alert_owner=name, before_only=True,
    )  # fmt: skip


MAKERS: dict[str, Callable[[LookalikeContext], Lookalike | str]] = {
    "chaos-recovered": chaos_recovered,
    "chaos-paused": chaos_paused,
    "flag-on": flag_on,
    "cronjob": cronjob,
    "job-failed": job_failed,
}
WEIGHTS = {"chaos-recovered": 2, "chaos-paused": 2, "flag-on": 2, "cronjob": 1, "job-failed": 2}
"""Relative weights next to the everyday changes of :mod:`churn` (whose weights sum to 15)."""


def explains(owner: str, labels: dict[str, str]) -> bool:
    """Whether an alert with ``labels`` is about the pods of a look-alike named ``owner``."""
    pod = labels.get("pod", "")
    return (
        labels.get("service_name") == owner or labels.get("job_name") == owner or pod.startswith(owner + "-")
    )
