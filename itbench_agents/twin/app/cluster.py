"""A read-only view of the cluster state the behaviour model needs, taken at one instant.

It answers: which pods run which service (and are Ready), what environment each container
actually got at start, which Services / NetworkPolicies / nodes / chaos experiments exist.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...k8s.readiness import serving
from ..controllers.kinds import (
    CONFIGMAPS,
    DEPLOYMENTS,
    ENDPOINTS,
    NETPOLS,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
)
from ..faults.chaos import CHAOS_GRS, ActiveChaos, active_experiments, picked
from ..kube.store import ObjectStore
from .model import AppModel, Service

Obj = dict[str, Any]

_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def find_container(pod: Obj, name: str) -> Obj | None:
    cs = pod.get("spec", {}).get("containers") or []
    for c in cs:
        if c.get("name") == name:
            return dict(c)
    return dict(cs[0]) if cs else None


@dataclass
class EnvResult:
    env: dict[str, str]
    errors: list[str] = field(default_factory=list)


def resolve_env(container: Obj, namespace: str, store: ObjectStore, pod: Obj | None = None) -> EnvResult:
    """A container's environment as the kubelet builds it (envFrom, then env, with $(VAR) expansion).

    Missing ConfigMaps/Secrets/keys that are not ``optional`` are reported in ``errors`` with the
    kubelet's message (CreateContainerConfigError)."""
    env: dict[str, str] = {}
    errors: list[str] = []
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        for kind, gr in (("configMapRef", CONFIGMAPS), ("secretRef", SECRETS)):
            ref = src.get(kind)
            if not ref:
                continue
            obj = store.get(gr, namespace, ref.get("name", ""))
            if obj is None:
                if not ref.get("optional"):
                    errors.append(
                        f'{"configmap" if gr == CONFIGMAPS else "secret"} "{ref.get("name")}" not found'
                    )
                continue
            for k, v in _data_of(obj).items():
                env[prefix + k] = v
    for e in container.get("env") or []:
        name = e.get("name", "")
        if "value" in e:
            env[name] = _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), str(e.get("value") or ""))
            continue
        vf = e.get("valueFrom") or {}
        if "fieldRef" in vf and pod is not None:
            env[name] = _field_ref(pod, vf["fieldRef"].get("fieldPath", ""))
            continue
        for kind, gr, label in (
            ("configMapKeyRef", CONFIGMAPS, "configmap"),
            ("secretKeyRef", SECRETS, "secret"),
        ):
            ref = vf.get(kind)
            if not ref:
                continue
            obj = store.get(gr, namespace, ref.get("name", ""))
            key = ref.get("key", "")
            if obj is None:
                if not ref.get("optional"):
                    errors.append(f'{label} "{ref.get("name")}" not found')
            elif key not in _data_of(obj):
                if not ref.get("optional"):
                    kind_word = "ConfigMap" if gr == CONFIGMAPS else "Secret"
                    errors.append(f"couldn't find key {key} in {kind_word} {namespace}/{ref.get('name')}")
            else:
                env[name] = _data_of(obj)[key]
    return EnvResult(env, errors)


def _data_of(obj: Obj) -> dict[str, str]:
    out: dict[str, str] = {}
    if obj.get("kind") == "Secret" or "stringData" in obj or obj.get("type"):
        for k, v in (obj.get("data") or {}).items():
            try:
                out[k] = base64.b64decode(str(v)).decode("utf-8", "replace")
            except ValueError:
                out[k] = ""
        for k, v in (obj.get("stringData") or {}).items():
            out[k] = str(v)
        return out
    return {k: str(v) for k, v in (obj.get("data") or {}).items()}


def _field_ref(pod: Obj, path: str) -> str:
    meta = pod.get("metadata", {})
    if path == "metadata.name":
        return str(meta.get("name", ""))
    if path == "metadata.namespace":
        return str(meta.get("namespace", ""))
    if path == "metadata.uid":
        return str(meta.get("uid", ""))
    if path == "status.podIP":
        return str(pod.get("status", {}).get("podIP", ""))
    if path == "spec.nodeName":
        return str(pod.get("spec", {}).get("nodeName", ""))
    m = re.match(r"metadata\.labels\['(.+)'\]", path)
    if m:
        return str((meta.get("labels") or {}).get(m.group(1), ""))
    return ""


@dataclass
class Instance:
    """One running pod of a service."""

    pod: Obj
    container: Obj
    env: dict[str, str]
    ready: bool
    runs_as: str

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.pod["metadata"].get("labels") or {})

    @property
    def ip(self) -> str:
        return str(self.pod.get("status", {}).get("podIP") or "10.244.0.1")

    def listens_on(self, svc: Service) -> set[int]:
        ports = set()
        for lis in svc.listens:
            v = self.env.get(lis.env or "", "")
            ports.add(int(v) if v.isdigit() else lis.port)
        return ports


class ClusterView:
    """The cluster at ``now`` from the app's point of view."""

    def __init__(
        self,
        store: ObjectStore,
        app: AppModel,
        now: float,
        env_snapshots: dict[tuple[str, str], dict[str, str]] | None = None,
        chaos_first_seen: dict[str, float] | None = None,
    ) -> None:
        self.store = store
        self.app = app
        self.ns = app.namespace
        self.now = now
        self._env_snap = env_snapshots or {}
        self.services = app.behaviour.services
        chaos_objs: list[tuple[str, Obj]] = []
        for kind, gr in CHAOS_GRS.items():
            chaos_objs.extend((kind, o) for o in store.list(gr))
        self.chaos: list[ActiveChaos] = active_experiments(chaos_objs, now, chaos_first_seen or {})
        self._binaries = {s.binary: n for n, s in self.services.items() if s.binary}
        self._instances: dict[str, list[Instance]] | None = None
        self._serving: dict[str, list[Instance]] = {}
        self._label_index: dict[tuple[str, str], set[int]] | None = None
        self._select_cache: dict[frozenset[tuple[str, str]], list[Obj]] = {}

    # the store does not change while a view is in use (views are keyed by resourceVersion), so
    # these lists are read on first use: a verdict that needs none of them costs no listing
    @cached_property
    def k8s_services(self) -> dict[str, Obj]:
        return {s["metadata"]["name"]: s for s in self.store.list(SERVICES, self.ns)}

    @cached_property
    def netpols(self) -> list[Obj]:
        return self.store.list(NETPOLS, self.ns)

    @cached_property
    def nodes(self) -> dict[str, Obj]:
        return {n["metadata"]["name"]: n for n in self.store.list(NODES)}

    @cached_property
    def pods(self) -> list[Obj]:
        return self.store.list(PODS, self.ns)

    @cached_property
    def cluster_dns_down(self) -> bool:
        """Nothing answers on the cluster DNS address: the ``kube-dns`` Service is gone or has no
        ready endpoint (CoreDNS scaled to zero, crashing...). A twin without CoreDNS installed at
        all resolves names as before."""
        from ..controllers import coredns

        svc = self.store.get(SERVICES, coredns.NAMESPACE, coredns.SERVICE)
        ep = self.store.get(ENDPOINTS, coredns.NAMESPACE, coredns.SERVICE)
        if svc is None:
            return (
                ep is not None
                or self.store.get(DEPLOYMENTS, coredns.NAMESPACE, coredns.DEPLOYMENT) is not None
            )
        return not any(sub.get("addresses") for sub in (ep or {}).get("subsets") or [])

    @cached_property
    def workloads(self) -> dict[str, Obj]:
        out: dict[str, Obj] = {}
        for gr in (DEPLOYMENTS, STATEFULSETS):
            for w in self.store.list(gr, self.ns):
                out.setdefault(w["metadata"]["name"], w)
        return out

    def select(self, selector: dict[str, str] | None) -> list[Obj]:
        """Pods of the app namespace matching an equality selector (empty selector: none), in name order."""
        if not selector:
            return []
        key = frozenset(selector.items())
        hit = self._select_cache.get(key)
        if hit is not None:
            return hit
        if self._label_index is None:
            self._label_index = {}
            for i, pod in enumerate(self.pods):
                for kv in (pod["metadata"].get("labels") or {}).items():
                    self._label_index.setdefault(kv, set()).add(i)
        sets = [self._label_index.get(kv, set()) for kv in key]
        idx = set.intersection(*sets) if sets else set()
        out = [self.pods[i] for i in sorted(idx)]
        self._select_cache[key] = out
        return out

    @property
    def instances(self) -> dict[str, list[Instance]]:
        """Service → its pods (any state), computed on first use."""
        if self._instances is None:
            self._instances = {s: [] for s in self.services}
            for name in self.services:
                for pod, c in self._service_pods(name):
                    env = self.env_of(pod, c)
                    runs_as = self._runs_as(name, c)
                    self._instances[runs_as if runs_as in self._instances else name].append(
                        Instance(pod, c, env, serving(pod), runs_as)
                    )
        return self._instances

    def instances_of(self, service: str) -> list[Instance]:
        """One service's pods; without multi-binary images only that service's pods are examined."""
        if self._instances is not None or self._binaries:
            return self.instances.get(service, [])
        cache: dict[str, list[Instance]] = self.__dict__.setdefault("_one", {})
        if service not in cache:
            cache[service] = [
                Instance(pod, c, self.env_of(pod, c), serving(pod), service)
                for pod, c in self._service_pods(service)
            ]
        return cache[service]

    def _service_pods(self, name: str) -> Iterator[tuple[Obj, Obj]]:
        """(pod, container) of each unfinished pod of service ``name``'s workload, in name order."""
        svc = self.services[name]
        w = self.workloads.get(svc.workload or name)
        if w is None or svc.external:
            return
        sel = (w.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
        for pod in self.select(sel):
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue
            c = find_container(pod, svc.container or name)
            if c is not None:
                yield pod, c

    def _runs_as(self, name: str, container: Obj) -> str:
        cmd = container.get("command") or []
        if cmd and self._binaries:
            binary = str(cmd[0]).rsplit("/", 1)[-1]
            if binary in self._binaries:
                return self._binaries[binary]
        return name

    def env_of(self, pod: Obj, container: Obj) -> dict[str, str]:
        snap = self._env_snap.get((pod["metadata"].get("uid", ""), container.get("name", "")))
        if snap is not None:
            return snap
        return resolve_env(container, self.ns, self.store, pod).env

    def workload(self, service: str) -> Obj | None:
        return self.workloads.get(self.services[service].workload or service)

    def desired(self, service: str) -> int:
        w = self.workload(service)
        if w is None:
            return 0
        r = w.get("spec", {}).get("replicas", 1)
        return int(r if r is not None else 1)

    def serving(self, service: str) -> list[Instance]:
        """Ready pods that really run this service's process and are not failed by chaos."""
        if service in self._serving:
            return self._serving[service]
        out = []
        for inst in self.instances_of(service):
            if not inst.ready or inst.runs_as != service:
                continue
            if any(
                ch.kind == "PodChaos" and ch.action == "pod-failure" and picked(self, ch, inst.pod)
                for ch in self.chaos
            ):
                continue
            out.append(inst)
        self._serving[service] = out
        return out

    def chaos_on(self, pod: Obj, kind: str) -> list[ActiveChaos]:
        return [ch for ch in self.chaos if ch.kind == kind and picked(self, ch, pod)]

    def service_of_pod(self, pod: Obj) -> str | None:
        uid = pod["metadata"].get("uid")
        for name, insts in self.instances.items():
            if any(i.pod["metadata"].get("uid") == uid for i in insts):
                return name
        return None
