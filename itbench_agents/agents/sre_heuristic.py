"""sre-heuristic: a non-LLM SRE baseline over the same tools as sre-react.

    alerts ──▶ alerting services ──▶ where their error traces start
        ──▶ inspect workloads, pods, rollouts, chaos objects, config, quotas, policies
        ──▶ walk the call graph to the deepest unhealthy service
        ──▶ name the root cause(s) ("namespace/Kind/name") ──▶ apply the standard fix

It reads the cluster with the kubectl tool's binary and policy (``kubectl_json``), alerts with the
``alerts`` tool, error traces with the ``traces`` tool's search and the call graph with the
``topology`` tool's Jaeger query; fixes go through the ``kubectl`` tool in the mitigation phase, so
every action is recorded as in sre-react. It never sees the scenario or its ground truth:
everything comes from the endpoints.

What counts as suspicious (the rules):

- a Chaos Mesh experiment or Schedule in the namespace that is not paused and not recovered →
  delete it;
- a documented failure flag of the demo whose ``defaultVariant`` is not ``off`` → set ``off``,
  restart flagd (a flag the demo does not document is a product toggle: a weak suspect, left on);
- a Deployment whose newest revision was rolled out after the app was deployed and is not healthy
  (pods crash-looping, pending, not ready, OOM-killed; restarts that ended over 15 minutes before
  the newest time the cluster shows, in a container ready since, are history) → ``rollout undo``;
- a Deployment scaled to zero → scale to 1;
- a Service whose selector matches no workload, or whose targetPort matches no container port →
  patch it back to the workload of the same name; a workload with ports but no Service → recreate it;
- a ResourceQuota, NetworkPolicy, HorizontalPodAutoscaler or Deployment created after the app →
  delete it (Deployment: scale to 0);
- a cordoned node → uncordon.

A strong finding (the rules above, except a healthy-looking release, HPA or NetworkPolicy) names
a root cause wherever it is; an experiment or flag explains its service's crash-looping pods, whose
release is then left alone. "Unhealthy" means a failing alert (not one that only says a service went
quiet), a not-ready workload, a strong finding, or being where a quarter of an alerting service's
error traces start (a callee nothing answers for counts). Only with no strong finding anywhere is
a weak one used: the deepest unhealthy service's recent release — or its caller's, when that
release changed an environment variable naming it (an address).

With no firing or pending alert (besides severity `none`) it reports no incident and changes nothing.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..core.agent import EventSink
from ..core.output import AgentOutput, AlertExplanation, Diagnosis, DiagnosisEntity, Propagation, Usage
from ..core.task import Task
from ..k8s.selectors import matches_map
from ..k8s.times import parse_rfc3339
from ..tools.alerts import fetch_alerts
from ..tools.context import ToolContext
from ..tools.kubectl import kubectl_json
from ..tools.registry import ToolError, get_tool
from ..tools.summarize import trace_error_sources
from ..tools.topology import dependencies
from ..tools.traces import find_traces
from .base import AgentConfig

RECENT_AFTER_S = 300.0
"""Objects created this long after the namespace count as changes made after the app was deployed."""

# Feature flags of the OpenTelemetry demo and the service that reads each (from the demo's docs);
# unknown flags fall back to the longest service name their kebab-cased key starts with.
FLAG_SERVICE = {
    "adFailure": "ad",
    "adHighCpu": "ad",
    "adManualGc": "ad",
    "cartFailure": "cart",
    "paymentFailure": "payment",
    "paymentUnreachable": "checkout",
    "productCatalogFailure": "product-catalog",
    "recommendationCacheFailure": "recommendation",
    "kafkaQueueProblems": "checkout",
    "imageSlowLoad": "frontend-proxy",
    "loadGeneratorFloodHomepage": "load-generator",
    "failedReadinessProbe": "cart",
    "emailMemoryLeak": "email",
    "llmRateLimitError": "product-reviews",
    "llmInaccurateResponse": "product-reviews",
    "intlShippingSlowdown": "shipping",
}
SILENCE_ALERTS = {"NoRequestsReceived", "KafkaConsumerGroupInactive"}
"""Alerts that say a service went quiet: caused upstream of it."""
BENIGN_FLAGS = {"loadGeneratorTraffic", "loadGeneratorVUs"}
BAD_WAITING = {
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "RunContainerError",
    "PodInitializing",
}


@dataclass
class Finding:
    entity: str
    """``namespace/Kind/name`` (``Kind/name`` when cluster-scoped)."""
    service: str | None
    reason: str
    fixes: list[tuple[str, str | None]] = field(default_factory=list)
    """kubectl commands (and stdin) that undo the change."""
    weak: bool = False
    """A change that looks like everyday work (a healthy rollout, a new HPA or NetworkPolicy): undone
    only for the deepest unhealthy service, and only when nothing stronger was found."""
    changed_env: list[str] = field(default_factory=list)
    """For a rollout: the ``NAME=value`` environment variables its newest revision changed."""
    takes_room: bool = False
    """A change that takes room the app's pods need (a new quota, a cordoned node, a workload
    created after the app): a reason why a rollout's pods cannot start."""
    stuck: bool = False
    """A recent rollout whose pods are pending or not there: its trouble may be another finding's
    doing (one that ``takes_room``)."""


NAMESPACED_KINDS = {
    "deployments": "Deployment",
    "statefulsets": "StatefulSet",
    "replicasets": "ReplicaSet",
    "pods": "Pod",
    "services": "Service",
    "configmaps": "ConfigMap",
    "resourcequotas": "ResourceQuota",
    "networkpolicies": "NetworkPolicy",
    "horizontalpodautoscalers": "HorizontalPodAutoscaler",
}
"""What the heuristic reads in the app's namespace: resource → the ``kind`` of its objects."""


@dataclass
class Cluster:
    """A snapshot of the namespace, read once with ``kubectl get ... -o json``."""

    ns: str
    created: float
    objects: dict[str, list[dict[str, Any]]]
    nodes: list[dict[str, Any]]
    chaos: list[dict[str, Any]]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return self.objects.get(kind, [])

    @property
    def now(self) -> float:
        """The newest time the cluster's objects mention (creations, pod state changes): the
        cluster's "now" as far as these reads can tell."""
        times = [_ts(o) for objs in self.objects.values() for o in objs]
        for p in self.of("pods"):
            st = p.get("status") or {}
            for cs in (st.get("containerStatuses") or []) + (st.get("initContainerStatuses") or []):
                for state in (cs.get("state") or {}, cs.get("lastState") or {}):
                    for v in state.values():
                        for key in ("startedAt", "finishedAt"):
                            times.append(_parse(v.get(key)) if isinstance(v, dict) else 0.0)
        return max(times, default=0.0)


def _ts(obj: dict[str, Any]) -> float:
    return _parse((obj.get("metadata") or {}).get("creationTimestamp"))


def _parse(ts: Any) -> float:
    try:
        return parse_rfc3339(ts) if isinstance(ts, str) else 0.0
    except ValueError:
        return 0.0


CRASH_RESTARTS = 1
"""Restarts that make a container's recent crashes trouble. One, not the three of a settled
CrashLoopBackOff: a build that crashes 40 s after start has restarted twice when its alert fires and
three times a few seconds later, so a higher bar made the finding depend on how fast the agent read
the pods (the README's figures moved with the machine's load)."""

OLD_RESTART_S = 900.0
"""A container whose last restart ended this long before the cluster's "now" and that is ready
since has recovered (start-up ordering, a past incident): its restart count is history."""


def chaos_active(obj: dict[str, Any]) -> bool:
    """Whether a Chaos Mesh object can be doing anything: not paused, and (an experiment) not
    recovered for good."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    if str(ann.get("experiment.chaos-mesh.org/pause", "")).lower() == "true":
        return False
    if obj.get("kind") == "Schedule":
        return True
    conds = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
    return not (conds.get("AllRecovered") == "True" and conds.get("AllInjected") != "True")


_POD_DEFAULTS: dict[str, Any] = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
}
_CONTAINER_DEFAULTS: dict[str, Any] = {
    "imagePullPolicy": None,
    "resources": {},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


def _strip_defaults(tpl: dict[str, Any]) -> dict[str, Any]:
    """Drop fields the API server fills in by default, so a defaulted and an as-written template
    compare equal (only real changes count as a rollout)."""
    spec = tpl.get("spec", {})
    for k, v in _POD_DEFAULTS.items():
        if spec.get(k) == v:
            spec.pop(k)
    for key in ("containers", "initContainers"):
        for ctr in spec.get(key) or []:
            for k, v in _CONTAINER_DEFAULTS.items():
                if k in ctr and (v is None or ctr[k] == v):
                    ctr.pop(k)
            for port in ctr.get("ports") or []:
                if port.get("protocol") == "TCP":
                    port.pop("protocol")
    return tpl


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


class HeuristicAgent:
    name = "sre-heuristic"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.calls = 0

    # ------------------------------------------------------------------ reading
    def _try_get(self, ctx: ToolContext, command: str, events: EventSink) -> dict[str, Any] | None:
        """``kubectl <command> -o json``, recorded as a tool call; None when kubectl refuses."""
        self.calls += 1
        events({"type": "tool_call", "tool": "kubectl", "args": {"command": command + " -o json"}})
        try:
            data = kubectl_json(ctx, command)
        except ToolError as exc:
            events({"type": "observation", "tool": "kubectl", "content": None, "error": str(exc)})
            return None
        events(
            {"type": "observation", "tool": "kubectl", "content": f"{len(data.get('items', []))} object(s)"}
        )
        return data

    def _get(self, ctx: ToolContext, command: str, events: EventSink) -> dict[str, Any]:
        data = self._try_get(ctx, command, events)
        return {"items": []} if data is None else data

    def _get_many(
        self, ctx: ToolContext, resources: list[str], ns: str, events: EventSink
    ) -> list[dict[str, Any]]:
        """Objects of several resources in ``ns`` with one ``kubectl get a,b,c``; where that call
        fails (a resource the credential may not list), one call per resource, so a refusal
        costs only its own resource."""
        if len(resources) > 1:
            data = self._try_get(ctx, f"get {','.join(resources)} -n {ns}", events)
            if data is not None:
                return list(data.get("items", []))
        return [o for r in resources for o in self._get(ctx, f"get {r} -n {ns}", events).get("items", [])]

    def read_cluster(self, ctx: ToolContext, ns: str, events: EventSink) -> Cluster:
        objects: dict[str, list[dict[str, Any]]] = {r: [] for r in NAMESPACED_KINDS}
        resource_of = {kind: r for r, kind in NAMESPACED_KINDS.items()}
        for obj in self._get_many(ctx, list(NAMESPACED_KINDS), ns, events):
            r = resource_of.get(obj.get("kind", ""))
            if r is not None:
                objects[r].append(obj)
        namespace = self._get(ctx, f"get namespace {ns}", events)
        created = _ts(namespace) if namespace.get("metadata") else 0.0
        nodes = self._get(ctx, "get nodes", events).get("items", [])
        self.calls += 1
        try:
            from ..tools.kubectl import run_kubectl

            code, out = run_kubectl(ctx, ["api-resources", "--api-group=chaos-mesh.org", "-o", "name"])
            resources = [r.strip() for r in out.splitlines() if r.strip()] if code == 0 else []
        except ToolError:
            resources = []
        chaos = self._get_many(ctx, resources, ns, events) if resources else []
        return Cluster(ns, created, objects, nodes, chaos)

    # ------------------------------------------------------------------ rules
    def _recent(self, c: Cluster, obj: dict[str, Any]) -> bool:
        return c.created > 0 and _ts(obj) - c.created > RECENT_AFTER_S

    def _workloads(self, c: Cluster) -> list[tuple[str, dict[str, Any]]]:
        return [("Deployment", d) for d in c.of("deployments")] + [
            ("StatefulSet", s) for s in c.of("statefulsets")
        ]

    def _pods_of(self, c: Cluster, wl: dict[str, Any]) -> list[dict[str, Any]]:
        sel = wl.get("spec", {}).get("selector", {}).get("matchLabels", {}) or {}
        if not sel:
            return []
        return [p for p in c.of("pods") if matches_map(sel, p["metadata"].get("labels", {}))]

    def _pod_trouble(self, pods: list[dict[str, Any]], now: float = 0.0) -> str | None:
        """What is wrong with the first troubled pod; restarts that ended more than
        ``OLD_RESTART_S`` before ``now`` in a ready container are history, not trouble."""
        for p in pods:
            st = p.get("status", {})
            if st.get("phase") in ("Pending", "Failed"):
                return f"pod {p['metadata']['name']} is {st.get('phase')}"
            statuses = [(True, cs) for cs in st.get("initContainerStatuses") or []]
            statuses += [(False, cs) for cs in st.get("containerStatuses") or []]
            for init, cs in statuses:
                w = (cs.get("state") or {}).get("waiting") or {}
                if w.get("reason") in BAD_WAITING:
                    return f"pod {p['metadata']['name']}: {w['reason']}"
                last = (cs.get("lastState") or {}).get("terminated") or {}
                ended = _parse(last.get("finishedAt"))
                old = cs.get("ready") and ended > 0 and now - ended > OLD_RESTART_S
                if not old and (
                    last.get("reason") == "OOMKilled" or cs.get("restartCount", 0) >= CRASH_RESTARTS
                ):
                    return f"pod {p['metadata']['name']}: restarts={cs.get('restartCount', 0)} last={last.get('reason')}"
                if not init and not cs.get("ready", True):
                    return f"pod {p['metadata']['name']}: container {cs.get('name')} not ready"
        return None

    @staticmethod
    def _template_changed(rss: list[dict[str, Any]]) -> bool:
        """Whether the newest ReplicaSet's pod template differs from the previous one in more than
        a restart (``kubectl rollout restart`` only stamps an annotation)."""
        if len(rss) < 2:
            return False

        def norm(rs: dict[str, Any]) -> str:
            tpl = _strip_defaults(json.loads(json.dumps(rs.get("spec", {}).get("template", {}))))
            meta = tpl.get("metadata", {})
            (meta.get("labels") or {}).pop("pod-template-hash", None)
            (meta.get("annotations") or {}).pop("kubectl.kubernetes.io/restartedAt", None)
            for key in ("labels", "annotations"):
                if not meta.get(key):
                    meta.pop(key, None)
            return json.dumps(tpl, sort_keys=True)

        return norm(rss[-1]) != norm(rss[-2])

    @staticmethod
    def _env_changes(rss: list[dict[str, Any]]) -> list[str]:
        """``NAME=value`` of the env vars the newest ReplicaSet sets differently from the previous one."""

        def env(rs: dict[str, Any]) -> dict[str, str]:
            ctrs = rs.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
            return {
                f"{c.get('name')}/{e.get('name')}": str(e.get("value", ""))
                for c in ctrs
                for e in c.get("env") or []
            }

        if len(rss) < 2:
            return []
        new, old = env(rss[-1]), env(rss[-2])
        return sorted(f"{k.split('/', 1)[1]}={v}" for k, v in new.items() if old.get(k) != v)

    def findings(self, c: Cluster, services: list[str]) -> list[Finding]:
        """Every suspicious change in the namespace, rule by rule."""
        causes = self._chaos_rule(c) + self._flag_rule(c, services)
        # an active experiment or failure flag explains its service's crash-looping pods: its
        # last release is not also rolled back (a product toggle that is on explains nothing)
        explained = {f.service for f in causes if f.service and not f.weak}
        out = causes + [
            f
            for f in self._workload_rule(c)
            if not (f.service in explained and any(cmd.startswith("rollout undo") for cmd, _ in f.fixes))
        ]
        out += self._service_rule(c, out)
        return out + self._recent_object_rule(c) + self._node_rule(c)

    def _chaos_rule(self, c: Cluster) -> list[Finding]:
        """Chaos Mesh experiments → delete them."""
        ns = c.ns
        out: list[Finding] = []
        for ch in c.chaos:
            if not chaos_active(ch):
                continue
            kind, name = ch.get("kind", "Chaos"), ch["metadata"]["name"]
            sel = (ch.get("spec", {}).get("selector") or {}).get("labelSelectors") or {}
            target = next(iter(sel.values()), None)
            plural = kind.lower()
            out.append(
                Finding(
                    f"{ns}/{kind}/{name}",
                    target,
                    f"Chaos Mesh {kind} {name} targets {sel}",
                    [(f"delete {plural}.chaos-mesh.org {name} -n {ns}", None)],
                )
            )
        return out

    def _flag_rule(self, c: Cluster, services: list[str]) -> list[Finding]:
        """Failure flags not ``off`` in a flagd ConfigMap → turn them off, restart flagd; other flags
        that are on are weak suspects, left as they are."""
        ns = c.ns
        out: list[Finding] = []
        svc_names = sorted(
            {d["metadata"]["name"] for _, d in self._workloads(c)} | set(services), key=len, reverse=True
        )
        for cm in c.of("configmaps"):
            for key, text in (cm.get("data") or {}).items():
                if not key.endswith(".json") or '"flags"' not in text:
                    continue
                try:
                    doc = json.loads(text)
                except json.JSONDecodeError:
                    continue
                changed = []
                for flag, spec in (doc.get("flags") or {}).items():
                    variants = spec.get("variants") or {}
                    if flag in BENIGN_FLAGS or "off" not in variants or spec.get("defaultVariant") == "off":
                        continue
                    changed.append(flag)
                    if flag in FLAG_SERVICE:  # a product toggle stays on: turning it off is no fix
                        spec["defaultVariant"] = "off"
                if not changed:
                    continue
                fixes: list[tuple[str, str | None]] = []
                if any(f in FLAG_SERVICE for f in changed):
                    patch = json.dumps({"data": {key: json.dumps(doc, indent=2)}})
                    name = cm["metadata"]["name"]
                    fixes.append(
                        (f"patch configmap {name} -n {ns} --type=merge -p {shlex.quote(patch)}", None)
                    )
                    flagd = next(
                        (n for _, d in self._workloads(c) if (n := d["metadata"]["name"]) == "flagd"), None
                    )
                    if flagd:
                        fixes.append((f"rollout restart deployment/{flagd} -n {ns}", None))
                # the demo's documented failure flags first; a flag it does not document is a
                # product toggle of unknown effect: a weak suspect only, left on
                changed.sort(key=lambda f: f not in FLAG_SERVICE)
                for i, flag in enumerate(changed):
                    svc = FLAG_SERVICE.get(flag) or next(
                        (s for s in svc_names if _kebab(flag).startswith(s)), None
                    )
                    entity = f"{ns}/Deployment/{svc}" if svc else f"{ns}/ConfigMap/{cm['metadata']['name']}"
                    out.append(
                        Finding(
                            entity,
                            svc,
                            f"feature flag {flag} is enabled in {cm['metadata']['name']}",
                            fixes if i == 0 else [],
                            weak=flag not in FLAG_SERVICE,
                        )
                    )
        return out

    def _workload_rule(self, c: Cluster) -> list[Finding]:
        """Workloads created, scaled to zero or re-templated after the app was deployed."""
        ns = c.ns
        now = c.now
        out: list[Finding] = []
        rs_by_owner: dict[str, list[dict[str, Any]]] = {}
        for rs in c.of("replicasets"):
            for ref in rs["metadata"].get("ownerReferences") or []:
                rs_by_owner.setdefault(ref.get("name", ""), []).append(rs)
        for kind, wl in self._workloads(c):
            name = wl["metadata"]["name"]
            entity = f"{ns}/{kind}/{name}"
            lower = kind.lower()
            if self._recent(c, wl) and kind == "Deployment":
                out.append(
                    Finding(
                        entity,
                        name,
                        f"{kind} {name} was created after the app was deployed",
                        [(f"scale {lower}/{name} --replicas=0 -n {ns}", None)],
                        takes_room=True,
                    )
                )
                continue
            if (wl.get("spec", {}).get("replicas", 1) or 0) == 0:
                out.append(
                    Finding(
                        entity,
                        name,
                        f"{kind} {name} is scaled to 0",
                        [(f"scale {lower}/{name} --replicas=1 -n {ns}", None)],
                    )
                )
                continue
            trouble = self._pod_trouble(self._pods_of(c, wl), now)
            status = wl.get("status", {})
            desired = wl.get("spec", {}).get("replicas", 1)
            if trouble is None and (status.get("readyReplicas") or 0) < desired:
                trouble = f"{status.get('readyReplicas') or 0}/{desired} replicas ready"
            rss = sorted(rs_by_owner.get(name, []), key=_ts)
            rolled = (
                bool(rss)
                and kind == "Deployment"
                and self._recent(c, rss[-1])
                and self._template_changed(rss)
            )
            if rolled and trouble:
                out.append(
                    Finding(
                        entity,
                        name,
                        f"recent rollout of {name} is unhealthy: {trouble}",
                        [(f"rollout undo {lower}/{name} -n {ns}", None)],
                        stuck=trouble.endswith((" is Pending", " replicas ready")),
                    )
                )
            elif (
                rolled
                and wl.get("metadata", {})
                .get("annotations", {})
                .get("deployment.kubernetes.io/revision", "1")
                != "1"
            ):
                # a template change after deployment with healthy pods: still the prime suspect
                out.append(
                    Finding(
                        entity,
                        name,
                        f"{name}'s pod template changed after the app was deployed",
                        [(f"rollout undo {lower}/{name} -n {ns}", None)],
                        weak=True,
                        changed_env=self._env_changes(rss),
                    )
                )
        return out

    def _service_rule(self, c: Cluster, found: list[Finding]) -> list[Finding]:
        """Services that select nothing or target a port nobody listens on; missing Services."""
        ns = c.ns
        out: list[Finding] = []
        workloads = {d["metadata"]["name"]: (k, d) for k, d in self._workloads(c)}
        with_service: set[str] = set()
        for svc in c.of("services"):
            name = svc["metadata"]["name"]
            sel = svc.get("spec", {}).get("selector") or {}
            if not sel:
                continue
            matched = [
                n
                for n, (_, d) in workloads.items()
                if matches_map(sel, d["spec"]["template"]["metadata"].get("labels", {}))
            ]
            with_service.update(matched)
            if not matched and name in workloads:
                labels = workloads[name][1]["spec"]["template"]["metadata"].get("labels", {})
                fixed = {k: labels.get(k) for k in sel}
                out.append(
                    Finding(
                        f"{ns}/Service/{name}",
                        name,
                        f"Service {name}'s selector {sel} matches no pods",
                        [
                            (
                                f"patch service {name} -n {ns} --type=merge -p {shlex.quote(json.dumps({'spec': {'selector': fixed}}))}",
                                None,
                            )
                        ],
                    )
                )
                continue
            ports = {
                (p.get("name"), p.get("containerPort"))
                for n in matched
                for ctr in workloads[n][1]["spec"]["template"]["spec"].get("containers", [])
                for p in ctr.get("ports") or []
            }
            if not ports:
                continue
            numbers = {num for _, num in ports}
            names = {nm for nm, _ in ports if nm}
            for i, sp in enumerate(svc.get("spec", {}).get("ports") or []):
                tp = sp.get("targetPort", sp.get("port"))
                ok = (
                    tp in numbers
                    if isinstance(tp, int)
                    else (tp in names or (str(tp).isdigit() and int(tp) in numbers))
                )
                if not ok:
                    good = sp.get("port") if sp.get("port") in numbers else sorted(numbers)[0]
                    patch = json.dumps(
                        [{"op": "replace", "path": f"/spec/ports/{i}/targetPort", "value": good}]
                    )
                    out.append(
                        Finding(
                            f"{ns}/Service/{name}",
                            name,
                            f"Service {name} targets port {tp}, containers listen on {sorted(numbers)}",
                            [(f"patch service {name} -n {ns} --type=json -p {shlex.quote(patch)}", None)],
                        )
                    )
        if c.of("services"):
            for name, (_kind, d) in workloads.items():
                cports = [
                    p
                    for ctr in d["spec"]["template"]["spec"].get("containers", [])
                    for p in ctr.get("ports") or []
                ]
                if (
                    name in with_service
                    or not cports
                    or any(f.service == name and not f.weak for f in [*found, *out])
                ):
                    continue
                labels = d["spec"]["template"]["metadata"].get("labels", {})
                key = (
                    "opentelemetry.io/name" if "opentelemetry.io/name" in labels else next(iter(labels), None)
                )
                if key is None:
                    continue
                svc_obj = {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {
                        "selector": {key: labels[key]},
                        "ports": [
                            {
                                "name": p.get("name") or f"port-{p['containerPort']}",
                                "port": p["containerPort"],
                                "targetPort": p["containerPort"],
                            }
                            for p in cports
                        ],
                    },
                }
                out.append(
                    Finding(
                        f"{ns}/Service/{name}",
                        name,
                        f"workload {name} listens on {[p['containerPort'] for p in cports]} but no Service selects it",
                        [("apply -f -", json.dumps(svc_obj))],
                    )
                )
        return out

    def _recent_object_rule(self, c: Cluster) -> list[Finding]:
        """Quotas, network policies and autoscalers created after the app → delete."""
        ns = c.ns
        out: list[Finding] = []
        for plural, kind in (
            ("resourcequotas", "ResourceQuota"),
            ("networkpolicies", "NetworkPolicy"),
            ("horizontalpodautoscalers", "HorizontalPodAutoscaler"),
        ):
            for obj in c.of(plural):
                if self._recent(c, obj):
                    name = obj["metadata"]["name"]
                    spec = obj.get("spec", {})
                    selected = list(((spec.get("podSelector") or {}).get("matchLabels") or {}).values())
                    target = (spec.get("scaleTargetRef") or {}).get("name") or (
                        selected[0] if selected else None
                    )
                    out.append(
                        Finding(
                            f"{ns}/{kind}/{name}",
                            target,
                            f"{kind} {name} was created after the app was deployed",
                            [(f"delete {plural} {name} -n {ns}", None)],
                            weak=kind != "ResourceQuota",
                            takes_room=kind == "ResourceQuota",
                        )
                    )
        return out

    def _node_rule(self, c: Cluster) -> list[Finding]:
        """Cordoned nodes while pods are pending → uncordon."""
        out: list[Finding] = []
        if any(p.get("status", {}).get("phase") == "Pending" for p in c.of("pods")):
            for node in c.nodes:
                if node.get("spec", {}).get("unschedulable"):
                    name = node["metadata"]["name"]
                    out.append(
                        Finding(
                            f"Node/{name}",
                            None,
                            f"node {name} is cordoned while pods are pending",
                            [(f"uncordon {name}", None)],
                            takes_room=True,
                        )
                    )
        return out

    @staticmethod
    def starvations(chosen: list[Finding], ns: str) -> list[Propagation]:
        """A change that takes room, named with a rollout whose pods cannot start: the first explains
        the second (a quota, a cordoned node or a new workload starves it), and the diagnosis says
        so — naming both without the link would leave open which one started the incident."""
        return [
            Propagation(
                source=cause.entity,
                target=f"{ns}/Service/{stuck.service}",
                condition=cause.reason,
                effect=f"pods of {stuck.service} cannot start",
            )
            for cause in chosen
            if cause.takes_room
            for stuck in chosen
            if stuck.stuck and stuck.service and stuck.entity != cause.entity
        ]

    # ------------------------------------------------------------------ the walk
    @staticmethod
    def weak_suspects(findings: list[Finding], path: list[str]) -> list[Finding]:
        """With no strong finding: the deepest unhealthy service's own recent change — unless its
        caller on the path changed an environment variable that names it (an address, say), which
        breaks the call from the caller's side."""
        if not path:
            return []
        deepest = path[-1]
        weak = [f for f in findings if f.weak]
        if len(path) >= 2:
            caller = [f for f in weak if f.service == path[-2] and any(deepest in kv for kv in f.changed_env)]
            if caller:
                return caller
        # a release of its own before a product toggle that happens to carry its name
        return sorted((f for f in weak if f.service == deepest), key=lambda f: not f.fixes)

    def error_sources(self, ctx: ToolContext, alerting: list[str], events: EventSink) -> set[str]:
        """Services the alerting services' recent error traces start at (a callee that fails, or
        that nothing answers for), in at least a quarter of each service's error traces."""
        out: set[str] = set()
        for svc in alerting:
            self.calls += 1
            events({"type": "tool_call", "tool": "traces", "args": {"service": svc, "errors_only": True}})
            try:
                found = find_traces(ctx, svc, errors_only=True, since="15m", limit=50)
            except ToolError as exc:
                events({"type": "observation", "tool": "traces", "content": None, "error": str(exc)})
                continue
            counts: Counter[str] = Counter()
            for trace in found:
                counts.update(trace_error_sources(trace))
            sources = sorted(s for s, n in counts.items() if 4 * n >= len(found))
            events(
                {
                    "type": "observation",
                    "tool": "traces",
                    "content": f"{len(found)} error trace(s); error sources: {sources} of {dict(counts)}",
                }
            )
            out.update(sources)
        return out

    @staticmethod
    def deepest_unhealthy(
        start: list[str], edges: list[tuple[str, str, int]], unhealthy: set[str]
    ) -> tuple[str | None, list[str]]:
        """The longest chain of unhealthy callees from an alerting service; (deepest, path).
        Ties go to the first in name order."""
        callees: dict[str, list[str]] = {}
        for p, ch, _ in edges:
            callees.setdefault(p, []).append(ch)
        best: list[str] = []

        def walk(path: list[str]) -> None:
            nonlocal best
            if len(path) > len(best):
                best = list(path)
            for c in sorted(set(callees.get(path[-1], []))):
                if c in unhealthy and c not in path:
                    walk([*path, c])

        for s in sorted(start):
            walk([s])
        return (best[-1] if best else None), best

    # ------------------------------------------------------------------ episode
    def run(self, task: Task, events: EventSink) -> AgentOutput:
        t0 = time.perf_counter()
        ns = task.namespaces[0] if task.namespaces else "default"
        ctx = ToolContext.for_task(task)
        try:
            # firing and pending: an alert the same fault raises a few seconds later is evidence too
            # (reading firing alone would make the path depend on how fast the agent runs);
            # severity "none" is kube-prometheus' always-firing Watchdog: not an incident
            alerts = [
                a
                for a in fetch_alerts(ctx)
                if a.get("state") in ("firing", "pending")
                and (a.get("labels") or {}).get("severity") != "none"
            ]
        except ToolError as exc:
            events({"type": "error", "where": "alerts", "message": str(exc)})
            alerts = []
        self.calls += 1
        events({"type": "tool_call", "tool": "alerts", "args": {"state": "all"}})
        events({"type": "observation", "tool": "alerts", "content": [a.get("labels") for a in alerts]})
        if not alerts:
            events({"type": "agent_message", "content": "no firing alerts: no incident"})
            return AgentOutput(
                diagnosis=Diagnosis(),
                steps=1,
                diagnosis_time_s=time.perf_counter() - t0,
                usage=Usage(tool_calls=self.calls),
                extra={"termination": "completed", "findings": []},
            )
        alerting = sorted(
            {a["labels"].get("service_name") or a["labels"].get("service") or "" for a in alerts} - {""}
        )
        # a service that only stopped receiving requests is a symptom of its callers, not a suspect
        failing = sorted(
            {
                a["labels"].get("service_name") or a["labels"].get("service") or ""
                for a in alerts
                if a["labels"].get("alertname") not in SILENCE_ALERTS
            }
            - {""}
        )
        try:
            edges = dependencies(ctx) if "traces" not in ctx.masked else []
        except ToolError:
            edges = []
        self.calls += 1
        erroring = self.error_sources(ctx, alerting, events) if "traces" not in ctx.masked else set()
        cluster = self.read_cluster(ctx, ns, events)
        findings = self.findings(cluster, sorted({p for p, _, _ in edges} | {ch for _, ch, _ in edges}))
        troubled = set(failing) | erroring
        for _kind, wl in self._workloads(cluster):
            if (wl.get("status", {}).get("readyReplicas") or 0) < (
                wl.get("spec", {}).get("replicas", 1) or 0
            ):
                troubled.add(wl["metadata"]["name"])
        strong = [f for f in findings if not f.weak]
        # A weak finding (a healthy-looking release) does not make a service unhealthy: the walk
        # follows alerting, not-ready and strongly implicated services only.
        unhealthy = troubled | {f.service for f in strong if f.service}
        deepest, path = self.deepest_unhealthy(failing or alerting, edges, unhealthy)
        # Strong findings explain the incident; weak ones only when nothing stronger was found, and
        # then only the deepest unhealthy service's (several faults can be active, so every strong
        # finding counts, those on the unhealthy path first).
        suspects = strong or self.weak_suspects(findings, path)
        on_path = [f for f in suspects if f.service and f.service in path]
        chosen = on_path + [f for f in suspects if f not in on_path]
        # Only implicated changes are undone: a healthy release off the alerting path is left alone
        # (rolling back everything that changed is collateral damage, docs/metrics.md).
        to_fix = chosen
        entities: list[DiagnosisEntity] = []
        for f in chosen:  # one entity per object, however many findings name it
            same = next((e for e in entities if e.name == f.entity), None)
            if same is None:
                entities.append(
                    DiagnosisEntity(
                        name=f.entity, contributing_factor=True, reasoning=f.reason, evidence=f.reason
                    )
                )
            else:
                same.reasoning = same.evidence = f"{same.reasoning}; {f.reason}"
        if not entities and deepest:
            entities.append(
                DiagnosisEntity(
                    name=f"{ns}/Deployment/{deepest}",
                    contributing_factor=True,
                    reasoning="deepest unhealthy service on the alerting call path",
                    evidence=" -> ".join(path),
                )
            )
        propagations = [
            Propagation(
                source=f"{ns}/Service/{callee}",
                target=f"{ns}/Service/{caller}",
                condition=f"{callee} is unhealthy",
                effect=f"requests from {caller} to {callee} fail",
            )
            for caller, callee in zip(reversed(path[:-1]), reversed(path[1:]), strict=True)
        ]
        propagations[:0] = self.starvations(chosen, ns)
        diag = Diagnosis(
            entities=entities,
            propagations=propagations,
            alerts_explained=[
                AlertExplanation(
                    alert=a["labels"].get("alertname", "?"),
                    explained=bool(entities),
                    explanation=f"caused by {entities[0].name}" if entities else "",
                )
                for a in alerts
            ],
        )
        diag_time = time.perf_counter() - t0
        events({"type": "agent_message", "content": {"diagnosis": diag.model_dump(), "path": path}})
        actions_before = 0
        if "mitigation" in task.kind:
            self.calls += apply_fixes(ctx, to_fix, events)
            actions_before = len(ctx.actions)
        return AgentOutput(
            diagnosis=diag,
            mitigation_actions=list(ctx.actions),
            steps=self.calls,
            diagnosis_time_s=diag_time,
            usage=Usage(tool_calls=self.calls),
            extra={
                "termination": "completed",
                "findings": [f"{f.entity}: {f.reason}" for f in chosen],
                "path": path,
                "actions": actions_before,
            },
        )


def apply_fixes(ctx: ToolContext, findings: list[Finding], events: EventSink) -> int:
    """Run each finding's kubectl fixes once (mitigation phase); returns the calls made."""
    ctx.phase = "mitigation"
    kubectl = get_tool("kubectl")
    done: set[str] = set()
    for f in findings:
        for cmd, stdin in f.fixes:
            if cmd in done:
                continue
            done.add(cmd)
            args: dict[str, Any] = {"command": cmd, **({"stdin": stdin} if stdin else {})}
            events({"type": "tool_call", "tool": "kubectl", "args": args})
            res = kubectl.invoke(ctx, args)
            events(
                {
                    "type": "observation",
                    "tool": "kubectl",
                    "content": res.output,
                    "error": res.output if res.error else None,
                }
            )
    return len(done)


def make_agent(config: AgentConfig) -> HeuristicAgent:
    return HeuristicAgent(config)
