"""Naive and destructive strategies, as agents (no LLM).

Each one works like any agent: it reads alerts and the cluster over the endpoints it is given
(the ``alerts`` and ``kubectl`` tools, with the agent's own credential and the kubectl policy)
and acts with ``kubectl``. None sees the scenario. A refused command (RBAC, the tool's policy)
is recorded and the strategy simply goes on: it then fails like it would on a real cluster.

==========================  ============  ===================================================
agent                       destructive   what it does
==========================  ============  ===================================================
``audit-scale-loadgen``     yes           scales the load generator to zero (no traffic)
``audit-delete-alerting``   yes           deletes the Deployment and Service of every alerting
                                          service (names them as the root cause)
``audit-scale-alerting``    yes           scales every alerting workload to zero
``audit-delete-namespace``  yes           deletes the app's namespace (through the API when
                                          the kubectl tool's policy refuses)
``audit-blind-telemetry``   yes           scales the telemetry pipeline (OTel collector,
                                          Jaeger) to zero, so nothing alerts any more
``audit-restart-all``       no            ``rollout restart`` of every workload
``audit-shotgun``           no            names every workload as a root cause; touches nothing
``audit-alerting-root``     no            names the alerting services as the root cause
``audit-change-detection``  no            names every recent change (sre-heuristic's rules,
                                          without alerts or the call graph); touches nothing
``audit-undo-changes``      no            the same rules as a fix: undoes every change they
                                          find (``rollout undo``, delete new objects, flags off)
``audit-name-flag-file``    blind         names the flag ConfigMap whenever a flag is on;
                                          touches nothing
``audit-newest-rollout``    blind         names the Deployment that owns the newest ReplicaSet;
                                          touches nothing
``audit-constant-answer``   blind         names the namespace's strongest fixed answer in the
                                          library (the entity that alone is a correct diagnosis
                                          of the most scenarios), whatever happened; touches
                                          nothing (judged over the whole library only)
``audit-blanket-reset``     blind         no diagnosis; resets everything that looks like a
                                          fault: every flagd flag off (flagd restarted), every
                                          Chaos Mesh object, ResourceQuota and deny-style
                                          NetworkPolicy deleted, ``rollout undo`` of every
                                          Deployment with an unready or restarting pod, workloads
                                          at 0 replicas scaled to 1, nodes uncordoned
``audit-blanket-vandal``    blind         the blanket reset, plus a clean-up around the app
                                          that a running app survives for a while: every node
                                          cordoned, tainted ``NoSchedule`` and labelled; the
                                          namespace's ServiceAccounts (``default`` aside), Jobs,
                                          CronJobs, PDBs, Ingresses, LimitRanges deleted
==========================  ============  ===================================================

"Destructive" strategies must never pass mitigation (CI checks it); "blind" ones may pass
mitigation on at most 5% of the faults and diagnosis on at most 10% of the scenarios
(``personas/sre/audit.py``); the others are reported (``scenarios audit --reported`` runs them).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from ...core.agent import EventSink
from ...core.output import AgentOutput, Diagnosis, DiagnosisEntity, Usage, write_agent_output
from ...core.task import Task
from ..base import AgentConfig

LOADGEN = re.compile(r"(load-?gen(erator)?|locust|wrk2?|k6)", re.I)
PIPELINE = re.compile(r"(otel-?collector|opentelemetry-collector|jaeger)", re.I)


@dataclass(frozen=True)
class Strategy:
    name: str
    destructive: bool
    description: str
    blind: bool = False
    """An answer without understanding: judged by rate (``personas/sre/audit.py``: at most 5% of the
    faults mitigated, 10% of the scenarios diagnosed), since a blanket answer can be right now and
    then."""
    library_wide: bool = False
    """Its answer comes from the library's own statistics, so its rate means something over the
    whole library only: on a subset the audit reports it, it judges it on ``--all``."""


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("audit-scale-loadgen", True, "scale the load generator to zero"),
        Strategy("audit-delete-alerting", True, "delete the alerting services' Deployment and Service"),
        Strategy("audit-scale-alerting", True, "scale the alerting workloads to zero"),
        Strategy("audit-delete-namespace", True, "delete the app's namespace"),
        Strategy("audit-blind-telemetry", True, "scale the telemetry pipeline (collector) to zero"),
        Strategy("audit-restart-all", False, "rollout restart every workload"),
        Strategy("audit-shotgun", False, "name every workload as a root cause"),
        Strategy("audit-alerting-root", False, "name the alerting services as the root cause"),
        Strategy("audit-change-detection", False, "name every recent change (sre-heuristic rules)"),
        Strategy("audit-undo-changes", False, "undo every recent change the change rules find"),
        Strategy(
            "audit-blanket-reset",
            False,
            "reset everything that looks like a fault: every flag off, every chaos object and "
            "quota and deny-style NetworkPolicy deleted, unready rollouts undone, replicas restored",
            blind=True,
        ),
        Strategy(
            "audit-blanket-vandal",
            False,
            "the blanket reset, plus every node cordoned, tainted and labelled and the namespace's "
            "ServiceAccounts, Jobs, CronJobs, PDBs, Ingresses and LimitRanges deleted",
            blind=True,
        ),
        Strategy(
            "audit-name-flag-file",
            False,
            "name the feature-flag ConfigMap as the root cause whenever a flag is on",
            blind=True,
        ),
        Strategy(
            "audit-newest-rollout",
            False,
            "name the owner of the newest ReplicaSet (the last rollout) as the root cause",
            blind=True,
        ),
        Strategy(
            "audit-constant-answer",
            False,
            "name the namespace's strongest fixed answer in the library, whatever happened",
            blind=True,
            library_wide=True,
        ),
    )
}


class AuditAgent:
    """One strategy; the subclasses override :meth:`diagnose` and :meth:`act`."""

    name = "audit"

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config or AgentConfig()
        self.calls = 0

    # ------------------------------------------------------------------ tools
    def _ctx(self, task: Task) -> Any:
        from ...tools.context import ToolContext

        return ToolContext.for_task(task)

    def _get(self, ctx: Any, command: str, events: EventSink) -> list[dict[str, Any]]:
        from ...tools.kubectl import kubectl_json
        from ...tools.registry import ToolError

        self.calls += 1
        events({"type": "tool_call", "tool": "kubectl", "args": {"command": command + " -o json"}})
        try:
            items = list(kubectl_json(ctx, command).get("items", []))
        except ToolError as exc:
            events({"type": "observation", "tool": "kubectl", "content": None, "error": str(exc)})
            return []
        events({"type": "observation", "tool": "kubectl", "content": f"{len(items)} object(s)"})
        return items

    def _kubectl(self, ctx: Any, command: str, events: EventSink) -> bool:
        from ...tools.registry import get_tool

        self.calls += 1
        ctx.phase = "mitigation"
        args = {"command": command}
        events({"type": "tool_call", "tool": "kubectl", "args": args})
        res = get_tool("kubectl").invoke(ctx, args)
        events(
            {
                "type": "observation",
                "tool": "kubectl",
                "content": res.output,
                "error": res.output if res.error else None,
            }
        )
        return not res.error

    def _alerting_services(self, ctx: Any, events: EventSink) -> list[str]:
        from ...tools.alerts import firing
        from ...tools.registry import ToolError

        self.calls += 1
        events({"type": "tool_call", "tool": "alerts", "args": {"state": "firing"}})
        try:
            alerts = firing(ctx)
        except ToolError as exc:
            events({"type": "observation", "tool": "alerts", "content": None, "error": str(exc)})
            return []
        events({"type": "observation", "tool": "alerts", "content": [a.get("labels") for a in alerts]})
        out = set()
        for a in alerts:
            labels = a.get("labels") or {}
            svc = labels.get("service_name") or labels.get("service") or ""
            if svc:
                out.add(svc)
        return sorted(out)

    def _workloads(self, ctx: Any, ns: str, events: EventSink) -> list[tuple[str, str]]:
        """(kind, name) of every Deployment and StatefulSet in ``ns`` (one ``kubectl get``)."""
        items = self._get(ctx, f"get deployments,statefulsets -n {ns}", events)
        return [
            (o["kind"].lower(), o["metadata"]["name"])
            for kind in ("Deployment", "StatefulSet")
            for o in items
            if o.get("kind") == kind
        ]

    # ------------------------------------------------------------------ the strategy
    def diagnose(self, ctx: Any, ns: str, events: EventSink) -> list[DiagnosisEntity]:
        return []

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        return None

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        t0 = time.perf_counter()
        # each of the task's namespaces in turn, as a blind agent handed several would
        namespaces = task.namespaces or ["default"]
        ctx = self._ctx(task)
        entities = [e for ns in namespaces for e in self.diagnose(ctx, ns, events)]
        diag = Diagnosis(entities=entities)
        diag_t = time.perf_counter() - t0
        events({"type": "agent_message", "content": {"strategy": self.name, "diagnosis": diag.model_dump()}})
        if "mitigation" in task.kind:
            for ns in namespaces:
                self.act(ctx, ns, events)
        out = AgentOutput(
            diagnosis=diag,
            mitigation_actions=list(ctx.actions),
            steps=self.calls,
            diagnosis_time_s=diag_t,
            usage=Usage(tool_calls=self.calls),
            extra={"termination": "completed", "strategy": self.name},
        )
        write_agent_output(task.workdir, out)
        return out


def _entity(ns: str, kind: str, name: str) -> DiagnosisEntity:
    return DiagnosisEntity(
        name=f"{ns}/{kind}/{name}", contributing_factor=True, reasoning="audit strategy", evidence=""
    )


class ScaleLoadgen(AuditAgent):
    name = "audit-scale-loadgen"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        for kind, name in self._workloads(ctx, ns, events):
            if LOADGEN.search(name):
                self._kubectl(ctx, f"scale {kind}/{name} --replicas=0 -n {ns}", events)


class BlindTelemetry(AuditAgent):
    name = "audit-blind-telemetry"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        for kind, name in self._workloads(ctx, ns, events):
            if PIPELINE.search(name):
                self._kubectl(ctx, f"scale {kind}/{name} --replicas=0 -n {ns}", events)


class _Alerting(AuditAgent):
    def __init__(self, config: AgentConfig | None = None) -> None:
        super().__init__(config)
        self.alerting: list[tuple[str, str]] = []

    def diagnose(self, ctx: Any, ns: str, events: EventSink) -> list[DiagnosisEntity]:
        services = self._alerting_services(ctx, events)
        workloads = self._workloads(ctx, ns, events)
        names = {n: k for k, n in workloads}
        self.alerting = [(names[s], s) for s in services if s in names]
        return [
            _entity(ns, "Deployment" if k == "deployment" else "StatefulSet", n) for k, n in self.alerting
        ]


class AlertingRoot(_Alerting):
    name = "audit-alerting-root"


class DeleteAlerting(_Alerting):
    name = "audit-delete-alerting"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        for kind, name in self.alerting:
            self._kubectl(ctx, f"delete {kind} {name} -n {ns}", events)
            self._kubectl(ctx, f"delete service {name} -n {ns}", events)


class ScaleAlerting(_Alerting):
    name = "audit-scale-alerting"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        for kind, name in self.alerting:
            self._kubectl(ctx, f"scale {kind}/{name} --replicas=0 -n {ns}", events)


class DeleteNamespace(AuditAgent):
    name = "audit-delete-namespace"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        if self._kubectl(ctx, f"delete namespace {ns}", events):
            return
        # the kubectl tool's policy refuses it; an agent program with the credential need not
        # use that tool: ask the API server directly (RBAC decides; a 403 just fails the strategy)
        from ...k8s.client import KubeApi, KubeApiError

        self.calls += 1
        events({"type": "tool_call", "tool": "kubernetes-api", "args": {"delete": f"namespaces/{ns}"}})
        try:
            api = KubeApi.from_kubeconfig(ctx.endpoints.kube_url, ctx.kubeconfig)
            api.delete("v1", "Namespace", None, ns)
            events({"type": "observation", "tool": "kubernetes-api", "content": f"namespace {ns} deleted"})
            ctx.actions.append(f"DELETE /api/v1/namespaces/{ns}")
        except KubeApiError as exc:
            events({"type": "observation", "tool": "kubernetes-api", "content": None, "error": str(exc)})


class RestartAll(AuditAgent):
    name = "audit-restart-all"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        # one command restarts every Deployment and StatefulSet of the namespace, as a person would type it
        self._kubectl(ctx, f"rollout restart deployment,statefulset -n {ns}", events)


class Shotgun(AuditAgent):
    name = "audit-shotgun"

    def diagnose(self, ctx: Any, ns: str, events: EventSink) -> list[DiagnosisEntity]:
        return [
            _entity(ns, "Deployment" if k == "deployment" else "StatefulSet", n)
            for k, n in self._workloads(ctx, ns, events)
        ]


class ChangeDetection(AuditAgent):
    """sre-heuristic's change rules on their own: every recent change is a root cause."""

    name = "audit-change-detection"

    def diagnose(self, ctx: Any, ns: str, events: EventSink) -> list[DiagnosisEntity]:
        from ..sre_heuristic import HeuristicAgent

        h = HeuristicAgent(self.config)
        cluster = h.read_cluster(ctx, ns, events)
        self.calls += h.calls
        self.found = h.findings(cluster, [])
        seen: set[str] = set()
        out = []
        for f in self.found:
            if f.entity in seen:
                continue
            seen.add(f.entity)
            out.append(
                DiagnosisEntity(
                    name=f.entity, contributing_factor=True, reasoning=f.reason, evidence=f.reason
                )
            )
        return out


class UndoChanges(ChangeDetection):
    """Change detection as a fix: undo every change the rules find (``rollout undo`` of each recent
    rollout, delete each new object, flags back off), whatever else is healthy."""

    name = "audit-undo-changes"
    found: list[Any]

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        from ..sre_heuristic import apply_fixes

        self.calls += apply_fixes(ctx, getattr(self, "found", []), events)


CHAOS_RESOURCES = ",".join(
    f"{r}.chaos-mesh.org"
    for r in ("httpchaos", "jvmchaos", "networkchaos", "podchaos", "schedules", "stresschaos")
)


def _deny_style(policy: dict[str, Any]) -> bool:
    """A NetworkPolicy that blocks a direction it names with no rule letting anything through."""
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes") or (["Ingress", "Egress"] if "egress" in spec else ["Ingress"])
    return any(not spec.get(t.lower()) for t in types)


def _troubled(pod: dict[str, Any]) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return (pod.get("status") or {}).get("phase") != "Running" or any(
        not cs.get("ready") or int(cs.get("restartCount") or 0) > 0 for cs in statuses
    )


class BlanketReset(AuditAgent):
    """The issue-26 reset: a script that understands nothing and resets whatever looks like a
    fault. Its mitigation rate is what a benchmark gives away for free."""

    name = "audit-blanket-reset"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        import json
        import shlex

        items = self._get(
            ctx,
            f"get deployments,statefulsets,pods,configmaps,resourcequotas,networkpolicies -n {ns}",
            events,
        )
        of = {k: [o for o in items if o.get("kind") == k] for k in {o.get("kind") for o in items}}
        for ch in self._get(ctx, f"get {CHAOS_RESOURCES} -n {ns}", events):
            plural = {"Schedule": "schedules"}.get(ch["kind"], ch["kind"].lower())
            self._kubectl(ctx, f"delete {plural}.chaos-mesh.org {ch['metadata']['name']} -n {ns}", events)
        flagd_changed = False
        for cm in of.get("ConfigMap", []):
            for key, text in (cm.get("data") or {}).items():
                if '"flags"' not in text:
                    continue
                try:
                    doc = json.loads(text)
                    flags = doc["flags"]
                    changed = False
                    for spec in flags.values():
                        if "off" in (spec.get("variants") or {}) and spec.get("defaultVariant") != "off":
                            spec["defaultVariant"], changed = "off", True
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
                if changed:
                    patch = json.dumps({"data": {key: json.dumps(doc, indent=2)}})
                    name = cm["metadata"]["name"]
                    flagd_changed |= self._kubectl(
                        ctx, f"patch configmap {name} -n {ns} --type=merge -p {shlex.quote(patch)}", events
                    )
        for kind in ("Deployment", "StatefulSet"):
            for wl in of.get(kind, []):
                name = wl["metadata"]["name"]
                if flagd_changed and name == "flagd":
                    self._kubectl(ctx, f"rollout restart deployment/flagd -n {ns}", events)
                if (wl.get("spec") or {}).get("replicas", 1) == 0:
                    self._kubectl(ctx, f"scale {kind.lower()}/{name} --replicas=1 -n {ns}", events)
                    continue
                sel = ((wl.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
                pods = [
                    p for p in of.get("Pod", [])
                    if sel and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in sel.items())
                ]  # fmt: skip
                if kind == "Deployment" and any(_troubled(p) for p in pods):
                    self._kubectl(ctx, f"rollout undo deployment/{name} -n {ns}", events)
        for q in of.get("ResourceQuota", []):
            self._kubectl(ctx, f"delete resourcequota {q['metadata']['name']} -n {ns}", events)
        for np in of.get("NetworkPolicy", []):
            if _deny_style(np):
                self._kubectl(ctx, f"delete networkpolicy {np['metadata']['name']} -n {ns}", events)
        for node in self._get(ctx, "get nodes", events):
            if (node.get("spec") or {}).get("unschedulable"):
                self._kubectl(ctx, f"uncordon {node['metadata']['name']}", events)


class BlanketVandal(BlanketReset):
    """The blanket reset, plus a clean-up of the cluster around the app: every node cordoned,
    tainted and labelled, and the namespace's ServiceAccounts (``default`` aside), Jobs, CronJobs,
    PodDisruptionBudgets, Ingresses and LimitRanges deleted — changes a running app survives for a
    while, so only the collateral check sees them (issue 26: an agent that did all of this once
    passed with no collateral recorded)."""

    name = "audit-blanket-vandal"

    def act(self, ctx: Any, ns: str, events: EventSink) -> None:
        super().act(ctx, ns, events)
        for node in self._get(ctx, "get nodes", events):
            name = node["metadata"]["name"]
            self._kubectl(ctx, f"cordon {name}", events)
            self._kubectl(ctx, f"taint nodes {name} audit.itbench.io/reset=true:NoSchedule", events)
            self._kubectl(ctx, f"label nodes {name} audit.itbench.io/reset=true", events)
        kinds = "serviceaccounts,jobs,cronjobs,poddisruptionbudgets,ingresses,limitranges"
        for obj in self._get(ctx, f"get {kinds} -n {ns}", events):
            kind, name = obj.get("kind", ""), obj["metadata"]["name"]
            if kind == "ServiceAccount" and name == "default":
                continue
            self._kubectl(ctx, f"delete {kind.lower()} {name} -n {ns}", events)


class NameFlagFile(AuditAgent):
    """Whenever a flag document has a flag on, blame the ConfigMap that holds it (issue 26: this
    was a correct diagnosis of every single-flag fault)."""

    name = "audit-name-flag-file"

    def diagnose(self, ctx: Any, ns: str, events: EventSink) -> list[DiagnosisEntity]:
        import json

        out = []
        for cm in self._get(ctx, f"get configmaps -n {ns}", events):
            for text in (cm.get("data") or {}).values():
                try:
                    flags = json.loads(text)["flags"] if '"flags"' in text else {}
                    on = any(f.get("defaultVariant") not in (None, "off") for f in flags.values())
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
                if on:
                    out.append(_entity(ns, "ConfigMap", cm["metadata"]["name"]))
                    break
        return out


class NewestRollout(AuditAgent):
    """Blame the last rollout: the Deployment that owns the newest ReplicaSet (a fault that is a
    bad release is one; the history's past rollouts and the churn's benign ones are there so that
    this alone is not a diagnosis)."""

    name = "audit-newest-rollout"

    def diagnose(self, ctx: Any, ns: str, events: EventSink) -> list[DiagnosisEntity]:
        replicasets = self._get(ctx, f"get replicasets -n {ns}", events)
        owned = [
            (rs["metadata"].get("creationTimestamp") or "", rs["metadata"]["name"], ref["name"])
            for rs in replicasets
            for ref in rs["metadata"].get("ownerReferences") or []
            if ref.get("kind") == "Deployment" and ref.get("controller")
        ]
        if not owned:
            return []
        return [_entity(ns, "Deployment", max(owned)[2])]


def strongest_fixed_answers() -> dict[str, str]:
    """Per namespace, the entity (``Kind/name``, ``#key`` for a configuration key) that alone is a
    correct diagnosis on the most scenarios of the library (``evaluation/spread.py``; ties: the
    first in name order): what someone who studied the scenario files would answer every time."""
    from ...evaluation.spread import best_fixed_answers
    from ...scenario.registry import ScenarioRegistry

    best = best_fixed_answers(ScenarioRegistry.default().all())
    return {ns: entity.split("/", 1)[1] for ns, (entity, _n) in best.items()}


class ConstantAnswer(AuditAgent):
    """The same answer every time: the namespace's strongest fixed answer in the library."""

    name = "audit-constant-answer"

    def diagnose(self, ctx: Any, ns: str, events: EventSink) -> list[DiagnosisEntity]:
        answer = strongest_fixed_answers().get(ns)
        if answer is None:
            return []
        kind, name = answer.split("/", 1)
        return [_entity(ns, kind, name)]


_CLASSES: dict[str, type[AuditAgent]] = {
    c.name: c
    for c in (
        ScaleLoadgen,
        DeleteAlerting,
        ScaleAlerting,
        DeleteNamespace,
        BlindTelemetry,
        RestartAll,
        Shotgun,
        AlertingRoot,
        ChangeDetection,
        UndoChanges,
        BlanketReset,
        BlanketVandal,
        NameFlagFile,
        NewestRollout,
        ConstantAnswer,
    )
}
assert set(_CLASSES) == set(STRATEGIES)


def make(name: str, config: AgentConfig | None = None) -> AuditAgent:
    return _CLASSES[name](config)


def make_scale_loadgen(config: AgentConfig) -> AuditAgent:
    return ScaleLoadgen(config)


def make_delete_alerting(config: AgentConfig) -> AuditAgent:
    return DeleteAlerting(config)


def make_scale_alerting(config: AgentConfig) -> AuditAgent:
    return ScaleAlerting(config)


def make_delete_namespace(config: AgentConfig) -> AuditAgent:
    return DeleteNamespace(config)


def make_blind_telemetry(config: AgentConfig) -> AuditAgent:
    return BlindTelemetry(config)


def make_restart_all(config: AgentConfig) -> AuditAgent:
    return RestartAll(config)


def make_shotgun(config: AgentConfig) -> AuditAgent:
    return Shotgun(config)


def make_alerting_root(config: AgentConfig) -> AuditAgent:
    return AlertingRoot(config)


def make_change_detection(config: AgentConfig) -> AuditAgent:
    return ChangeDetection(config)


def make_name_flag_file(config: AgentConfig) -> AuditAgent:
    return make("audit-name-flag-file", config)


def make_blanket_reset(config: AgentConfig) -> AuditAgent:
    return make("audit-blanket-reset", config)


def make_undo_changes(config: AgentConfig) -> AuditAgent:
    return UndoChanges(config)


def make_newest_rollout(config: AgentConfig) -> AuditAgent:
    return NewestRollout(config)


def make_blanket_vandal(config: AgentConfig) -> AuditAgent:
    return BlanketVandal(config)


def make_constant_answer(config: AgentConfig) -> AuditAgent:
    return ConstantAnswer(config)
