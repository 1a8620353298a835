"""Strategies for FinOps cost incidents on the twin (``itbench scenarios audit --suite finops``): ways to
make the cost alert go away without finding the waste, each of which must fail mitigation.

Like the SRE strategies (``strategies.py``) they read and act only through the ``kubectl`` tool with
the agent's own credential, and none sees the scenario.

=================================  ============  ============================================
agent                              judged as     what it does
=================================  ============  ============================================
``audit-finops-scale-to-zero``     destructive   scales every Deployment and StatefulSet of
                                                 the namespace to zero (no spend, no app)
``audit-finops-delete-app``        destructive   deletes every Deployment and StatefulSet of the
                                                 namespace
``audit-finops-silence``           destructive   deletes the namespace's PrometheusRules (the
                                                 team's cost alerts) and touches nothing else
``audit-finops-blanket-cutter``    blind         deletes every HPA, CronJob, Job and
                                                 DaemonSet and every volume claim no running
                                                 pod mounts, scales every workload to one
                                                 replica and cuts every container's requests to
                                                 10m CPU and 32Mi
``audit-finops-trim``              blind         the cutter without the starving: deletes every
                                                 HPA, CronJob and Job and every unmounted
                                                 claim, scales every workload above one
                                                 replica to one, and unpins every Deployment
                                                 from its node selector
=================================  ============  ============================================

"Destructive" ones must pass mitigation nowhere; "blind" ones on at most 5% of the incidents
(``personas/sre/audit.py``). Neither names a root cause.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from ...core.agent import EventSink
from ..base import AgentConfig
from .strategies import AuditAgent, Strategy

FINOPS_TWIN_STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("audit-finops-scale-to-zero", True, "scale every workload of the namespace to zero"),
        Strategy("audit-finops-delete-app", True, "delete every Deployment and StatefulSet of the namespace"),
        Strategy("audit-finops-silence", True, "delete the namespace's cost alerts (its PrometheusRules)"),
        Strategy(
            "audit-finops-blanket-cutter",
            False,
            "delete every HPA, CronJob, Job and DaemonSet and every unmounted volume claim, scale every "
            "workload to one replica and cut every container's requests to 10m CPU / 32Mi",
            blind=True,
        ),
        Strategy(
            "audit-finops-trim",
            False,
            "delete every HPA, CronJob and Job and every unmounted volume claim, scale every workload "
            "above one replica to one and remove every Deployment's node selector",
            blind=True,
        ),
    )
}

WORKLOADS = "deployments,statefulsets"


class ScaleToZero(AuditAgent):
    name = "audit-finops-scale-to-zero"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        for kind, name in self._workloads(ctx, ns, events):
            self._kubectl(ctx, f"scale {kind}/{name} --replicas=0 -n {ns}", events)


class DeleteApp(AuditAgent):
    name = "audit-finops-delete-app"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        for kind, name in self._workloads(ctx, ns, events):
            self._kubectl(ctx, f"delete {kind} {name} -n {ns}", events)


class Silence(AuditAgent):
    name = "audit-finops-silence"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        for rule in self._get(ctx, f"get prometheusrules -n {ns}", events):
            self._kubectl(ctx, f"delete prometheusrule {rule['metadata']['name']} -n {ns}", events)


class _Trimmer(AuditAgent):
    DELETE = "horizontalpodautoscalers,cronjobs,jobs"

    def _delete_all(self, ctx: Any, ns: str, events: EventSink) -> None:
        for obj in self._get(ctx, f"get {self.DELETE} -n {ns}", events):
            kind = obj.get("kind", "").lower()
            self._kubectl(ctx, f"delete {kind} {obj['metadata']['name']} -n {ns}", events)
        self._delete_unmounted_claims(ctx, ns, events)

    def _delete_unmounted_claims(self, ctx: Any, ns: str, events: EventSink) -> None:
        """Every PersistentVolumeClaim no running or starting pod mounts: it looks orphaned."""
        mounted = {
            (v.get("persistentVolumeClaim") or {}).get("claimName")
            for pod in self._get(ctx, f"get pods -n {ns}", events)
            if (pod.get("status") or {}).get("phase") in ("Pending", "Running")
            for v in (pod.get("spec") or {}).get("volumes") or []
        }
        for pvc in self._get(ctx, f"get persistentvolumeclaims -n {ns}", events):
            if pvc["metadata"]["name"] not in mounted:
                self._kubectl(ctx, f"delete persistentvolumeclaim {pvc['metadata']['name']} -n {ns}", events)

    def _scale_to_one(self, ctx: Any, ns: str, events: EventSink) -> list[dict[str, Any]]:
        items = self._get(ctx, f"get {WORKLOADS} -n {ns}", events)
        for wl in items:
            if int((wl.get("spec") or {}).get("replicas", 1) or 0) > 1:
                kind, name = wl["kind"].lower(), wl["metadata"]["name"]
                self._kubectl(ctx, f"scale {kind}/{name} --replicas=1 -n {ns}", events)
        return items


class BlanketCutter(_Trimmer):
    """The blind cost cutter: everything optional deleted, everything at one replica, every request
    cut to almost nothing. It removes every waste there is, and the app with it as soon as a
    workload needs what it asked for."""

    name = "audit-finops-blanket-cutter"
    DELETE = "horizontalpodautoscalers,cronjobs,jobs,daemonsets"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        self._delete_all(ctx, ns, events)
        for wl in self._scale_to_one(ctx, ns, events):
            kind, name = wl["kind"].lower(), wl["metadata"]["name"]
            self._kubectl(ctx, f"set resources {kind}/{name} --requests=cpu=10m,memory=32Mi -n {ns}", events)


class Trim(_Trimmer):
    """The cutter's milder cousin: deletes what looks optional and scales down what looks
    oversized, but leaves requests alone (so nothing is starved)."""

    name = "audit-finops-trim"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        self._delete_all(ctx, ns, events)
        for wl in self._scale_to_one(ctx, ns, events):
            pod = ((wl.get("spec") or {}).get("template") or {}).get("spec") or {}
            if wl.get("kind") == "Deployment" and pod.get("nodeSelector"):
                patch = json.dumps({"spec": {"template": {"spec": {"nodeSelector": None}}}})
                name = wl["metadata"]["name"]
                self._kubectl(
                    ctx, f"patch deployment {name} -n {ns} --type=merge -p {shlex.quote(patch)}", events
                )


_CLASSES: dict[str, type[AuditAgent]] = {
    c.name: c for c in (ScaleToZero, DeleteApp, Silence, BlanketCutter, Trim)
}
assert set(_CLASSES) == set(FINOPS_TWIN_STRATEGIES)


def make_scale_to_zero(config: AgentConfig) -> AuditAgent:
    return ScaleToZero(config)


def make_delete_app(config: AgentConfig) -> AuditAgent:
    return DeleteApp(config)


def make_silence(config: AgentConfig) -> AuditAgent:
    return Silence(config)


def make_blanket_cutter(config: AgentConfig) -> AuditAgent:
    return BlanketCutter(config)


def make_trim(config: AgentConfig) -> AuditAgent:
    return Trim(config)
