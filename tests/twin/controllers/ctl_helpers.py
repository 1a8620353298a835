"""Helpers for the controller tests: a scriptable runtime and small object builders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.runtime import ContainerVerdict, DefaultRuntime, ResourceUsage

Obj = dict[str, Any]

PODS = GroupResource("", "pods")
EVENTS = GroupResource("", "events")
NODES = GroupResource("", "nodes")
SERVICES = GroupResource("", "services")
DEPLOYMENTS = GroupResource("apps", "deployments")
REPLICASETS = GroupResource("apps", "replicasets")


class ScriptedRuntime(DefaultRuntime):
    """Verdicts chosen by a test: ``rules[container name] = ContainerVerdict | callable``."""

    def __init__(self) -> None:
        self.rules: dict[str, ContainerVerdict | Callable[[Obj, Obj, float], ContainerVerdict]] = {}
        self.cpu: dict[str, float] = {}
        self.calls = 0

    def verdict(
        self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float
    ) -> ContainerVerdict:
        self.calls += 1
        rule = self.rules.get(container["name"])
        if rule is None:
            return super().verdict(pod, container, init=init, node=node, now=now)
        if callable(rule):
            return rule(pod, container, now)
        return rule

    def usage(self, pod: Obj, container: Obj, now: float) -> ResourceUsage:
        if container["name"] in self.cpu:
            return ResourceUsage(self.cpu[container["name"]], 1e8)
        return super().usage(pod, container, now)


def deployment(
    name: str,
    replicas: int = 1,
    image: str = "registry.example/app:1.0",
    container: str = "app",
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    namespace: str = "default",
    **pod_spec: Any,
) -> Obj:
    c: Obj = {"name": container, "image": image, "ports": [{"name": "http", "containerPort": 8080}]}
    res: Obj = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    if res:
        c["resources"] = res
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [c], **pod_spec}},
        },
    }


def claim(name: str, size: str | None = "1Gi", storage_class: str | None = None) -> Obj:
    """A PersistentVolumeClaim in ``default``: ``size`` None requests no storage at all."""
    spec: Obj = {"accessModes": ["ReadWriteOnce"]}
    if size is not None:
        spec["resources"] = {"requests": {"storage": size}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def pods_of(twin: Twin, prefix: str, namespace: str = "default") -> list[Obj]:
    return [p for p in twin.store.list(PODS, namespace) if p["metadata"]["name"].startswith(prefix + "-")]


def events_for(twin: Twin, name: str, reason: str | None = None, namespace: str = "default") -> list[Obj]:
    return [
        e
        for e in twin.store.list(EVENTS, namespace)
        if e["involvedObject"]["name"] == name and (reason is None or e["reason"] == reason)
    ]


def cstatus(pod: Obj, i: int = 0, init: bool = False) -> Obj:
    key = "initContainerStatuses" if init else "containerStatuses"
    return pod["status"][key][i]  # type: ignore[no-any-return]


def condition(obj: Obj, ctype: str) -> Obj | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c["type"] == ctype:
            return c  # type: ignore[no-any-return]
    return None


def hpa(target: str, min_r: int = 1, max_r: int = 5, util: int = 50) -> Obj:
    """An autoscaling/v2 HPA of Deployment ``target`` in ``default`` on CPU utilisation."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": min_r,
            "maxReplicas": max_r,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": util},
                    },
                }
            ],
        },
    }
