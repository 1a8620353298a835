"""The ``topology`` tool: the service call graph (Jaeger dependencies) plus Kubernetes ownership
(which Deployment / StatefulSet backs each Service, and how many replicas are ready)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..k8s.selectors import matches_map
from .context import ToolContext
from .http import get_json
from .spec import ToolError, tool
from .traces import environment_now


@dataclass
class Workload:
    namespace: str
    kind: str
    name: str
    labels: dict[str, str]
    desired: int
    ready: int

    @property
    def entity(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"


@dataclass
class Topology:
    edges: list[tuple[str, str, int]] = field(default_factory=list)
    """(caller, callee, call count) from Jaeger."""
    services: dict[str, list[Workload]] = field(default_factory=dict)
    """Kubernetes Service "ns/name" → workloads whose pod template its selector matches."""
    workloads: list[Workload] = field(default_factory=list)

    def callees(self, svc: str) -> list[str]:
        return sorted({c for p, c, _ in self.edges if p == svc})

    def callers(self, svc: str) -> list[str]:
        return sorted({p for p, c, _ in self.edges if c == svc})


def kube_api(ctx: ToolContext) -> Any:
    """The official kubernetes client configured from the environment's kubeconfig."""
    from kubernetes import config

    return config.new_client_from_config(config_file=ctx.endpoints.kubeconfig)


def dependencies(ctx: ToolContext) -> list[tuple[str, str, int]]:
    end_ms = int(environment_now(ctx) * 1000)
    body = get_json(
        ctx.require("jaeger") + "/api/dependencies",
        params={"endTs": end_ms, "lookback": 3600 * 1000},
        timeout=ctx.timeout_s,
    )
    out = [
        (str(d.get("parent")), str(d.get("child")), int(d.get("callCount", 0)))
        for d in body.get("data") or []
    ]
    return sorted(out)


def ownership(ctx: ToolContext) -> tuple[dict[str, list[Workload]], list[Workload]]:
    from kubernetes import client

    api = kube_api(ctx)
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)

    def plain(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = api.sanitize_for_serialization(obj)
        return out

    namespaces = ctx.namespaces or [plain(n)["metadata"]["name"] for n in core.list_namespace().items]
    workloads: list[Workload] = []
    services: dict[str, list[Workload]] = {}
    for ns in namespaces:
        listed = [("Deployment", plain(d)) for d in apps.list_namespaced_deployment(ns).items]
        listed += [("StatefulSet", plain(s)) for s in apps.list_namespaced_stateful_set(ns).items]
        for kind, obj in listed:
            spec = obj.get("spec", {})
            labels = spec.get("template", {}).get("metadata", {}).get("labels", {}) or {}
            desired = spec.get("replicas", 1)
            ready = obj.get("status", {}).get("readyReplicas", 0) or 0
            workloads.append(Workload(ns, kind, obj["metadata"]["name"], dict(labels), desired, ready))
        for svc in core.list_namespaced_service(ns).items:
            sobj = plain(svc)
            sel = dict(sobj.get("spec", {}).get("selector") or {})
            services[f"{ns}/{sobj['metadata']['name']}"] = [
                w for w in workloads if w.namespace == ns and matches_map(sel, w.labels)
            ]
    return services, workloads


def build_topology(ctx: ToolContext) -> Topology:
    topo = Topology()
    try:
        topo.edges = dependencies(ctx)
    except ToolError as exc:
        if "not available" not in str(exc) and "no jaeger" not in str(exc):
            raise
    try:
        topo.services, topo.workloads = ownership(ctx)
    except Exception as exc:
        raise ToolError(f"cannot read Kubernetes objects: {type(exc).__name__}: {str(exc)[:300]}") from None
    return topo


def format_topology(topo: Topology) -> str:
    lines = []
    if topo.edges:
        lines.append("call graph (caller -> callee [calls in the last hour]):")
        lines += [f"  {p} -> {c} [{n}]" for p, c, n in topo.edges]
    else:
        lines.append("call graph: unavailable (no trace dependencies)")
    lines.append("Kubernetes services -> workloads (ready/desired):")
    for svc, ws in sorted(topo.services.items()):
        backing = ", ".join(f"{w.entity} ({w.ready}/{w.desired})" for w in ws) or "(no matching workload)"
        lines.append(f"  {svc} -> {backing}")
    return "\n".join(lines)


@tool(kind="read")
def topology(ctx: ToolContext) -> str:
    """Show the service call graph (who calls whom, from traces) and which Kubernetes workload
    backs each Service with its ready/desired replicas."""
    return format_topology(build_topology(ctx))
