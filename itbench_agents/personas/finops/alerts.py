"""The cost alerts of a FinOps episode on the twin, as three things the harness keeps apart:

- **the team's rule**: OpenCost's cost alerts (``scenarios/rules/addons/opencost.yaml``) delivered as
  a PrometheusRule ``opencost-cost-alerts`` in the app's namespace, loaded by the twin's Prometheus
  Operator (``twin/addons/promoperator``). The agent may edit it — tuning a cost alert is a FinOps
  engineer's job, and the fix of the paper's cost-alert misconfiguration;
- **the reference rule**: the same file evaluated by an alert engine of the scorer's own over the
  twin's series from the fault on. The agent cannot touch it: a waste the agent hid by editing or
  deleting the team's rule still fires here;
- **the canary**: after scoring, the harness adds a known waste — idle pods whose requests bring
  the namespace's hourly CPU and memory spend to :data:`CANARY_TARGET` × the week before's (and add
  at least :data:`CANARY_SHARE` of the last hour's, where the namespace already spends more), and a
  volume claim nothing mounts doing the same to its storage spend — and runs the clock for
  :data:`CANARY_S`: the team's CPUSpend, MemorySpend and StorageSpend must fire on it. A rule
  deleted, renamed or neutered (a threshold above about 1.5 × last week's, a ``for`` of a day)
  fails here; the reference threshold is 1.2 ×. Sizing it on last week's spend, not only the last
  hour's, keeps an end state cheaper than last week from hiding the canary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ...paths import scenarios_dir

RULE_NAME = "opencost-cost-alerts"
COST_ALERTS = ("CPUSpend", "MemorySpend", "StorageSpend")
CANARY_NAME = "itbench-cost-canary"
CANARY_REPLICAS = 2
CANARY_TARGET = 1.8
"""The namespace's spend with the canary, as a multiple of its hourly spend the week before."""
CANARY_SHARE = 0.6
"""The least the canary adds, as a share of the last hour's spend."""
CANARY_S = 3600.0
"""How long the canary runs: the alerts average the last hour and hold 15 minutes."""


def rule_file() -> Path:
    return scenarios_dir() / "rules" / "addons" / "opencost.yaml"


def team_rule(namespace: str) -> dict[str, Any]:
    """The PrometheusRule the app's team owns, holding OpenCost's cost alerts."""
    spec = yaml.safe_load(rule_file().read_text(encoding="utf-8"))
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": RULE_NAME,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "opencost", "role": "cost-alert-rules"},
        },
        "spec": {"groups": spec["groups"]},
    }


def reference_engine(twin: Any, start: float) -> Any:
    """An alert engine of the scorer's own with the reference cost rules, evaluating from ``start``.
    Its rules are its own (the agent may edit the team's); the subqueries' inner results at final
    timestamps, a function of the twin's series alone, it shares with the twin's engine."""
    from ...twin.prometheus.alerts import AlertEngine, load_rule_file

    f = rule_file()
    groups = [(str(f), g) for g in load_rule_file(f)]
    engine = AlertEngine(
        lambda: twin.metrics, groups, start=start, lock=twin.lock, share_subqueries_with=twin.alerts
    )
    engine.ask_states_only()  # only which alerts fire is asked of it (twin_extension.end_state_checks)
    return engine


def canary_size(
    last: tuple[float, float], week: tuple[float, float], cpu_rate: float, ram_rate: float
) -> tuple[int, int]:
    """Millicores and MiB per canary replica, from the namespace's hourly (CPU, memory) cost over
    the last hour and the week before it, priced at the general nodes' rates: enough to bring the
    spend to :data:`CANARY_TARGET` × the week's, and at least :data:`CANARY_SHARE` of the last
    hour's; at least 100m and 128Mi."""
    cpu_h = max(CANARY_TARGET * week[0] - last[0], CANARY_SHARE * last[0])
    ram_h = max(CANARY_TARGET * week[1] - last[1], CANARY_SHARE * last[1])
    cores = cpu_h / cpu_rate if cpu_rate > 0 else 0.0
    gib = ram_h / ram_rate if ram_rate > 0 else 0.0
    return max(100, round(cores * 1000 / CANARY_REPLICAS)), max(128, round(gib * 1024 / CANARY_REPLICAS))


def storage_canary_size(last: float, week: float, rate_gib_h: float) -> int:
    """GiB of the canary's volume, from the namespace's hourly storage spend over the last hour and
    the week before it (as :func:`canary_size`); at least 1 GiB."""
    spend = max(CANARY_TARGET * week - last, CANARY_SHARE * last)
    return max(1, math.ceil(spend / rate_gib_h)) if rate_gib_h > 0 else 1


def namespace_storage_cost(model: Any, namespace: str, start: float, end: float) -> float:
    """$ per hour the namespace's claims' volumes cost over ``[start, end)``, mounted or not (what
    StorageSpend charges it: each volume's capacity at its price while bound to the namespace)."""
    edges = np.asarray([start, end])
    hours = max(end - start, 1e-9) / 3600.0
    total = 0.0
    for d in model.disks():
        if d.claim_namespace == namespace:
            total += (
                float(d.seconds(edges, model.now())[0]) / 3600.0 * d.size_bytes / 2**30 * d.hourly_per_gib
            )
    return total / hours


def canary_volume(namespace: str, gib: int, volume: str = f"pvc-{CANARY_NAME}") -> list[dict[str, Any]]:
    """The canary's storage waste: a claim bound to a volume of ``gib``, mounted by nothing."""
    from ...scenario.volumes import bound_claim

    meta = {"labels": {"app": CANARY_NAME}}
    return bound_claim(namespace, CANARY_NAME, volume, f"{gib}Gi", metadata=meta)


def canary(namespace: str, millicores: int, mib: int) -> dict[str, Any]:
    """The Deployment of the known waste: idle pods with large requests."""
    labels = {"app": CANARY_NAME}
    res = {"cpu": f"{millicores}m", "memory": f"{mib}Mi"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": CANARY_NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": CANARY_REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "idle",
                            "image": "busybox:1.36",
                            "command": ["sh", "-c", "sleep infinity"],
                            "resources": {"requests": res, "limits": res},
                        }
                    ]
                },
            },
        },
    }


@dataclass(frozen=True)
class CanaryResult:
    ok: bool
    detail: str


@dataclass(frozen=True)
class CanaryWaste:
    """The canary of one namespace: per replica CPU and memory, and the volume's size."""

    namespace: str
    millicores: int
    mib: int
    gib: int


def run_canary(twin: Any, api: Any, wastes: Sequence[CanaryWaste]) -> CanaryResult:
    """Add the canary to each namespace at once, run the clock, and tell whether the team's cost
    alerts caught it in every one."""
    from ...k8s.client import KubeApiError

    try:
        for i, w in enumerate(wastes):
            volume = f"pvc-{CANARY_NAME}" + (f"-{w.namespace}" if i else "")  # volumes are cluster-wide
            for obj in [canary(w.namespace, w.millicores, w.mib), *canary_volume(w.namespace, w.gib, volume)]:
                api.create(obj)
    except KubeApiError as e:
        return CanaryResult(False, f"the canary could not be created: {e}")
    twin.advance(CANARY_S)
    # only the cost alerts' rules are evaluated over the canary's hour: nothing else is asked after it
    active = twin.alerts.firing(twin.now(), COST_ALERTS)
    missed = []
    for w in wastes:
        firing = {a.name for a in active if a.labels.get("namespace") == w.namespace}
        missing = [n for n in COST_ALERTS if n not in firing]
        if missing:
            missed.append(
                (f"in {w.namespace}: " if len(wastes) > 1 else "")
                + f"a known waste ({CANARY_REPLICAS} idle pods of {w.millicores}m CPU and {w.mib}Mi and an "
                f"unmounted {w.gib}Gi volume, bringing the namespace's spend to {CANARY_TARGET} × last "
                f"week's) ran {CANARY_S / 60:.0f} min and the namespace's cost alerts did not fire: "
                f"{', '.join(missing)}"
            )
    if missed:
        return CanaryResult(False, "; ".join(missed))
    where = f" in each of {len(wastes)} namespaces" if len(wastes) > 1 else ""
    return CanaryResult(True, f"the cost alerts caught a known waste{where}: {', '.join(COST_ALERTS)}")
