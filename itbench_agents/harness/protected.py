"""A baseline worth protecting: what a healthy production namespace runs with on purpose.

Issue 26: a blind "reset everything" agent (every flag off, every chaos object and quota deleted)
passed mitigation on three scenarios in four, because the freshly deployed app had nothing such a
reset would break. Each episode's app is therefore deployed with, seeded per scenario and trial:

* product feature flags switched on in the flagd file (:mod:`product_flags`; apps with a flag file);
* a namespace ResourceQuota on object counts, with room to spare (a platform team's guard rail):
  pods, Services and Deployments at several times what the app runs;
* a LimitRange on claims (another guard rail): no PersistentVolumeClaim over
  :data:`CLAIM_MAX_STORAGE` (the twin's LimitRanger enforces it on create, as the API server does);
* an egress guard rail: a default-deny egress NetworkPolicy and one that lets the app's pods reach
  each other and the cluster's DNS (:func:`egress_guard`): the healthy app runs under it, a blind
  clean-up that deletes every deny-style policy breaks it. It isolates egress only, so an ingress
  fault (``frontend-ingress-network-policy``) still bites: policies add up, and an ingress allow in
  the baseline would neutralise every deny-style ingress fault;
* a paused weekly game-day chaos ``Schedule`` (a NetworkChaos delay drill) on a workload the
  scenario does not name, and a PodDisruptionBudget on the same workload (``maxUnavailable: 1``:
  a drain takes its pods one at a time; the twin's disruption controller keeps its status, and
  the eviction subresource spends it as the API server does).

FinOps episodes add what a cost-conscious production namespace runs on purpose, so that a blind
cost cutter has something real to break (the FinOps audit, ``agents/audit/finops_twin.py``: deleting
every HPA, CronJob and Job and scaling every workload to one replica passed 3 of 17 cost incidents
where the app had none):

* one workload the scenario does not name runs highly available: two replicas under a
  HorizontalPodAutoscaler (two to four, on memory per pod) that keeps them;
* a suspended quarter-end CronJob that finance resumes at the close of a quarter (it costs nothing
  while suspended), and the volume it archives the close to: a bound PersistentVolumeClaim no
  running pod mounts — an "orphaned" volume to a blind eye, and a week of storage spend for the
  namespace's StorageSpend alert to compare with.

They are part of the app from deploy time (created with its manifests, so they are not recent
changes), fire no alert, and are in the baseline like every object: deleting the quota or the
Schedule, or turning a product flag off, is collateral damage that fails mitigation under the
default policy (``endstate.py``). The plan is recorded as the trajectory's ``baseline`` event,
never shown to the agent.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..scenario.spec import Scenario
from ..scenario.volumes import bound_claim
from . import product_flags
from .churn import INFRA, Protection, scenario_seed
from .churn_lookalikes import CHAOS_API

QUOTA_NAME = "namespace-object-counts"
DRILL_DAYS = ("0 3 * * 6", "30 2 * * 0", "0 4 * * 3")
Obj = dict[str, Any]


@dataclass
class ProtectedBaseline:
    product_flags: list[str] = field(default_factory=list)
    """Flags to turn on in the flag file (those it already defines are left as they are)."""
    objects: list[Obj] = field(default_factory=list)
    """Objects created with the app (the quota, the game-day Schedule)."""
    flags_added: list[str] = field(default_factory=list)
    """The product flags :meth:`customize` turned on (none where the app has no flag file)."""
    replicas: dict[str, int] = field(default_factory=dict)
    """Deployments (by name) that run with more replicas than the app's manifests give them."""

    def customize(self, manifests: list[Obj]) -> list[Obj]:
        """The app's manifests with the protected configuration: flags on, replicas raised, objects
        appended."""
        self.flags_added = product_flags.add_to(manifests, self.product_flags)
        for o in manifests:
            if o.get("kind") == "Deployment" and _name(o) in self.replicas:
                o.setdefault("spec", {})["replicas"] = self.replicas[_name(o)]
        return [*manifests, *self.objects]

    def describe(self) -> dict[str, Any]:
        return {
            "product_flags": self.flags_added,
            "replicas": dict(self.replicas),
            "objects": [
                "/".join(x for x in (o["metadata"].get("namespace"), o["kind"], o["metadata"]["name"]) if x)
                for o in self.objects
            ],
        }


def _name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def _replicas(o: Obj) -> int:
    return int((o.get("spec") or {}).get("replicas", 1) or 0)


def quota(namespace: str, manifests: list[Obj], nodes: int = 3) -> Obj:
    """An object-count quota the healthy app (rollouts, scaling, jobs included) stays well under."""
    pods = sum(_replicas(o) for o in manifests if o.get("kind") in ("Deployment", "StatefulSet"))
    pods += nodes * sum(1 for o in manifests if o.get("kind") == "DaemonSet")
    services = sum(1 for o in manifests if o.get("kind") == "Service")
    deployments = sum(1 for o in manifests if o.get("kind") == "Deployment")
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": QUOTA_NAME,
            "namespace": namespace,
            "labels": {"platform.example.com/guard-rail": "true"},
        },
        "spec": {
            "hard": {
                "pods": str(max(100, 4 * pods)),
                "services": str(max(50, 3 * services)),
                "count/deployments.apps": str(max(50, 3 * deployments)),
            }
        },
    }


CLAIM_LIMITS_NAME = "claim-size-limits"
CLAIM_MAX_STORAGE = "500Gi"


def claim_limits(namespace: str) -> Obj:
    """A LimitRange that caps each PersistentVolumeClaim's storage request: it defaults nothing
    (a ``Container`` item with ``max`` would give limitless containers a limit), it only refuses a
    claim larger than :data:`CLAIM_MAX_STORAGE`."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {
            "name": CLAIM_LIMITS_NAME,
            "namespace": namespace,
            "labels": {"platform.example.com/guard-rail": "true"},
        },
        "spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": CLAIM_MAX_STORAGE}}]},
    }


DENY_EGRESS_NAME = "default-deny-egress"
ALLOW_EGRESS_NAME = "allow-egress-in-namespace-and-dns"


def egress_guard(namespace: str) -> list[Obj]:
    """Default-deny egress for every pod of the namespace, and the allow that the healthy app runs
    under: to any pod of its own namespace, and DNS (UDP and TCP 53) to CoreDNS in kube-system."""
    meta = {"namespace": namespace, "labels": {"platform.example.com/guard-rail": "true"}}
    dns = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": DENY_EGRESS_NAME, **meta},
            "spec": {"podSelector": {}, "policyTypes": ["Egress"]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": ALLOW_EGRESS_NAME, **meta},
            "spec": {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [
                    {"to": [{"podSelector": {}}]},
                    {
                        "to": [dns],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    },
                ],
            },
        },
    ]


def gameday(namespace: str, target: Obj, rng: random.Random) -> Obj:
    """A paused weekly NetworkChaos drill on ``target``: it spawns nothing while paused."""
    labels = dict(((target.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
    return {
        "apiVersion": CHAOS_API,
        "kind": "Schedule",
        "metadata": {
            "name": f"gameday-{_name(target)}-latency",
            "namespace": namespace,
            "annotations": {"experiment.chaos-mesh.org/pause": "true"},
        },
        "spec": {
            "schedule": rng.choice(DRILL_DAYS),
            "type": "NetworkChaos",
            "historyLimit": 1,
            "concurrencyPolicy": "Forbid",
            "networkChaos": {
                "action": "delay",
                "mode": "one",
                "selector": {"namespaces": [namespace], "labelSelectors": labels},
                "delay": {"latency": "100ms"},
                "duration": "10m",
            },
        },
    }


def disruption_budget(namespace: str, target: Obj) -> Obj:
    """A PodDisruptionBudget on ``target``: voluntary disruptions one pod at a time. With one
    replica it still allows one (``expectedPods - maxUnavailable`` = 0 must stay healthy), so it
    never holds a drain back for good."""
    labels = dict(((target.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": f"{_name(target)}-pdb",
            "namespace": namespace,
            "labels": {"platform.example.com/guard-rail": "true"},
        },
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}},
    }


def plan(scenario: Scenario, seed: int, manifests: list[Obj]) -> ProtectedBaseline:
    """The protected configuration of one episode (seeded by scenario and trial seed)."""
    rng = random.Random(scenario_seed("protected", seed, scenario.id))
    ns = scenario.namespace
    out = ProtectedBaseline(product_flags=product_flags.choose(rng))
    out.objects.append(quota(ns, manifests))
    out.objects.append(claim_limits(ns))
    prot = Protection.of(scenario)
    pool = sorted(
        (
            o
            for o in manifests
            if o.get("kind") == "Deployment"
            and not INFRA.fullmatch(_name(o))
            and not prot.names_workload(_name(o))
            and ((o.get("spec") or {}).get("selector") or {}).get("matchLabels")
        ),
        key=_name,
    )
    if pool:
        drilled = rng.choice(pool)
        out.objects.append(gameday(ns, drilled, rng))
        out.objects.append(disruption_budget(ns, drilled))
    if scenario.persona == "finops":
        if pool:
            ha = rng.choice(pool)
            out.replicas[_name(ha)] = HA_REPLICAS
            out.objects.append(hpa(ns, ha))
        out.objects.append(quarter_end_cronjob(ns))
        out.objects.extend(archive_volume(ns, rng))
    out.objects.extend(egress_guard(ns))
    return out


HA_REPLICAS = 2


def hpa(namespace: str, target: Obj) -> Obj:
    """A HorizontalPodAutoscaler that keeps ``target`` highly available: two to four replicas on
    memory per pod (valid whether the app's containers set requests or, like the Astronomy Shop's
    chart, only limits)."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": _name(target), "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": _name(target)},
            "minReplicas": HA_REPLICAS,
            "maxReplicas": 2 * HA_REPLICAS,
            "metrics": [
                {
                    "type": "Resource",
                    # per pod, far above what the app's pods use: the two replicas stay two
                    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
                }
            ],
        },
    }


def quarter_end_cronjob(namespace: str) -> Obj:
    """The quarter-end close, suspended between closes (finance resumes it): it runs nothing."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": "quarter-end-close",
            "namespace": namespace,
            "labels": {"team": "finance"},
            "annotations": {"finance.example.com/owner": "resumed by finance at each quarter's close"},
        },
        "spec": {
            "schedule": "0 2 1 1,4,7,10 *",
            "suspend": True,
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [
                                {
                                    "name": "close",
                                    "image": "busybox:1.36",
                                    "command": ["sh", "-c", "echo closing the quarter; sleep 60"],
                                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                                    "volumeMounts": [{"name": "archive", "mountPath": "/archive"}],
                                }
                            ],
                            "volumes": [
                                {"name": "archive", "persistentVolumeClaim": {"claimName": ARCHIVE_CLAIM}}
                            ],
                        }
                    },
                }
            },
        },
    }


ARCHIVE_CLAIM = "quarter-end-archive"
ARCHIVE_SIZE = "20Gi"


def archive_volume(namespace: str, rng: random.Random) -> list[Obj]:
    """The quarter-end close's archive: a claim bound to the volume the cluster's default class
    provisioned for it (kind's local-path), kept between closes like any data volume."""
    volume = f"pvc-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
    meta = {
        "labels": {"team": "finance"},
        "annotations": {"finance.example.com/owner": "the quarter-end close writes its archive here"},
    }
    return bound_claim(namespace, ARCHIVE_CLAIM, volume, ARCHIVE_SIZE, metadata=meta)
