"""Mitigation scored on the end state: a baseline before injection, checks after settling.

Everything here goes over the wire (the Kubernetes API and the Prometheus HTTP API), so it works
against a live cluster as well as the twin. The functional probe of the user journeys is passed in
by the environment (the twin evaluates it on its behaviour model).

:func:`take_baseline` (right before the fault is injected, the app settled) records:

* workloads (Deployments, StatefulSets, DaemonSets) with their desired replicas, Services with
  their ready endpoints, and the other objects of :data:`KINDS` in the app's namespaces (PVCs,
  HPAs, NetworkPolicies, quotas, ConfigMaps, Secrets, ServiceAccounts, Chaos Mesh objects...) and
  of :data:`CLUSTER_KINDS` (Nodes), each with a fingerprint of its spec;
* the alerts already firing or pending in those namespaces;
* the request rate per service (span metrics, server spans) and their total;
* the error ratio per user journey.

:func:`assess` compares the cluster after settle with it. Mitigation passes only when every check
holds (each is reported on its own in ``mitigation.json``):

``alerts``        every alert of the app's namespaces that was not active (firing or pending) at
                  baseline is resolved (not firing): not only the scenario's expected ones;
                  pending alerts are listed but not counted (a ``for:`` clause not yet met is
                  how noise looks, e.g. a p95 over a handful of requests);
``journeys``      the functional probe of every user journey passes;
``traffic``       the total request rate is back to >= ``TRAFFIC_MIN_RATIO`` of the baseline;
``observability`` the telemetry pipeline runs (its workloads have ready pods) and span metrics
                  have fresh samples in the last minute;
``inventory``     no workload, Service or PVC of the baseline is missing, and no workload is scaled
                  below its baseline desired replicas (unless a fault operation set that
                  workload's replicas: the fault was the scaling itself);
``collateral``    objects changed or deleted that are not in the fault's footprint; whether this
                  fails mitigation is the collateral policy (``ITBENCH_COLLATERAL``): ``report``
                  (never), ``destructive`` (default: outside the footprint, deleting any
                  object, scaling a workload down, rolling a Deployment back to the pod
                  template of an earlier revision, changing or removing a ConfigMap's or
                  Secret's key, or a node's cordon or taints fails), ``any`` (any collateral
                  change fails).

The **fault footprint** (:func:`fault_footprint`) is the set of objects the scenario's fault
operations touch (created, patched, deleted, restarted) and, for configuration, the keys they set:
a flag operation covers its one flag in the flag document, a patch of a ConfigMap's or Secret's
data the keys it names — the object's other keys (another flag that is on, another service's
setting) are compared one by one like any object outside it. It is injection data, not the
diagnosis ground truth, and it is used only for the two documented exemptions: collateral damage
excludes footprint objects, and the replicas floor does not apply to a workload whose replicas a
fault set.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import requests
from pydantic import BaseModel, Field

from ..k8s.client import KubeApi, KubeApiError
from ..k8s.kinds import CHAOS_MESH_KINDS as CHAOS_KINDS
from ..scenario.spec import CreateOp, DeleteOp, FlagOp, Operation, PatchOp, RestartOp

BASELINE_SCHEMA = 1
TRAFFIC_MIN_RATIO = 0.8
FRESH_S = 60
RATE_WINDOW = "2m"
EXCLUDED_SERVICES = "flagd|load-generator|loadgenerator"
"""Services whose spans are not app traffic (as in the alert rules)."""
RESTART_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
COLLATERAL_ENV = "ITBENCH_COLLATERAL"

CollateralPolicy = Literal["report", "destructive", "any"]
COLLATERAL_POLICIES: tuple[str, ...] = ("report", "destructive", "any")
DEFAULT_COLLATERAL: CollateralPolicy = "destructive"

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
CONFIG_KINDS = ("ConfigMap", "Secret")
"""Kinds compared key by key (:func:`config_keys`)."""
KINDS: tuple[tuple[str, str], ...] = (
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("v1", "Service"),
    ("v1", "PersistentVolumeClaim"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("v1", "ResourceQuota"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "LimitRange"),
    ("batch/v1", "CronJob"),
    ("policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io/v1", "Ingress"),
    *(("chaos-mesh.org/v1alpha1", kind) for kind in CHAOS_KINDS),  # game-day drills included
)
"""Namespaced kinds whose objects the baseline records (a kind the cluster does not serve is skipped)."""
CLUSTER_KINDS: tuple[tuple[str, str], ...] = (("v1", "Node"),)
"""Cluster-scoped kinds the baseline records: deleting, cordoning, tainting or relabelling a node is
collateral like any other change."""
INVENTORY_KINDS = (*WORKLOAD_KINDS, "Service", "PersistentVolumeClaim")
"""Kinds whose disappearance fails mitigation whatever the collateral policy."""


# ---------------------------------------------------------------------------- models
class ObjectState(BaseModel):
    kind: str
    namespace: str
    name: str
    uid: str = ""
    owned: bool = False
    """Made by a controller (has owner references): its creation is the controller's, not an agent's."""
    fingerprint: str = ""
    """sha256 of the object's desired state (spec / data), without replicas and restart stamps."""
    replicas: int | None = None
    """Desired replicas (workloads)."""
    ready_replicas: int | None = None
    restarted_at: str | None = None
    """The pod template's ``kubectl.kubernetes.io/restartedAt`` stamp (workloads)."""
    endpoints: int | None = None
    """Ready endpoint addresses (Services)."""
    scale_target: str | None = None
    """``Kind/name`` an HPA scales."""
    min_replicas: int | None = None
    """An HPA's ``minReplicas``."""
    template: str | None = None
    """sha256 of a Deployment's pod template (without the restart stamp)."""
    history: list[str] = Field(default_factory=list)
    """Pod-template digests of the Deployment's older ReplicaSets (earlier revisions)."""
    keys: dict[str, str] = Field(default_factory=dict)
    """Configuration at the grain of its keys (ConfigMaps, Secrets): a digest per data key; a flag
    document (flagd's JSON, ``{"flags": {...}}``) per flag as ``<data key>#<flag>``, its
    remainder under the data key (see :func:`config_keys`). On a Node, the fields that decide where
    pods may run (:func:`scheduling_keys`)."""

    @property
    def key(self) -> str:
        return object_key(self.kind, self.namespace, self.name)


class JourneyState(BaseModel):
    name: str
    ok: bool
    error_ratio: float = 0.0
    detail: str = ""


class Baseline(BaseModel):
    """What the app looked like right before injection (``baseline.json`` in the episode folder)."""

    schema_version: int = BASELINE_SCHEMA
    taken_at: float
    """Environment time (twin: virtual Unix seconds)."""
    namespaces: list[str]
    objects: dict[str, ObjectState] = Field(default_factory=dict)
    alerts_active: list[str] = Field(default_factory=list)
    """Alerts firing or pending at baseline (``name{labels}``)."""
    request_rates: dict[str, float] | None = None
    """Server requests/s per service (None: Prometheus could not answer)."""
    total_request_rate: float | None = None
    journeys: list[JourneyState] = Field(default_factory=list)
    pipeline: list[str] = Field(default_factory=list)
    """Workloads the telemetry pipeline runs on (the OTel collector...)."""


class EndStateCheck(BaseModel):
    name: str
    ok: bool | None
    """None: could not be evaluated (reported, never counted as a pass of something measured)."""
    detail: str = ""


class CollateralChange(BaseModel):
    object: str
    """``namespace/Kind/name``."""
    change: Literal["deleted", "recreated", "scaled_down", "scaled_up", "rolled_back", "modified", "created"]
    detail: str = ""
    keys: list[str] = Field(default_factory=list)
    """Configuration keys changed or removed (``<data key>`` or ``<data key>#<flag>``) when the
    change is to a ConfigMap's or Secret's keys outside the footprint; added keys are in
    ``detail`` only. On a Node: ``spec.unschedulable`` (cordon) and ``spec.taints`` when they
    changed."""


class Footprint(BaseModel):
    """Objects the fault operations touch (``namespace/Kind/name``); see the module docstring."""

    objects: list[str] = Field(default_factory=list)
    replicas: list[str] = Field(default_factory=list)
    """Workloads whose replicas a fault operation sets."""
    keys: list[str] = Field(default_factory=list)
    """Configuration keys a fault operation sets, as ``namespace/Kind/name:<data key>`` (the whole
    data key, flags included) or ``...:<data key>#<flag>`` (one flag): the object itself is not
    in :attr:`objects` then, so its other keys stay protected."""

    def covers(self, obj: str, key: str) -> bool:
        """Whether configuration key ``key`` of object ``obj`` is inside the footprint."""
        data_key = key.split("#", 1)[0]
        return f"{obj}:{key}" in self.keys or f"{obj}:{data_key}" in self.keys


class EndState(BaseModel):
    checks: list[EndStateCheck] = Field(default_factory=list)
    alerts_new: list[str] = Field(default_factory=list)
    journeys: list[JourneyState] = Field(default_factory=list)
    traffic_ratio: float | None = None
    missing: list[str] = Field(default_factory=list)
    scaled_down: list[str] = Field(default_factory=list)
    collateral: list[CollateralChange] = Field(default_factory=list)
    restarted: list[str] = Field(default_factory=list)
    collateral_policy: str = DEFAULT_COLLATERAL

    @property
    def failed(self) -> list[EndStateCheck]:
        return [c for c in self.checks if c.ok is False]

    @property
    def passed(self) -> bool:
        return not self.failed


# ---------------------------------------------------------------------------- helpers
def object_key(kind: str, namespace: str | None, name: str) -> str:
    return f"{namespace}/{kind}/{name}" if namespace else f"{kind}/{name}"


def collateral_policy(value: str | None = None) -> CollateralPolicy:
    """The collateral policy: ``value``, else ``$ITBENCH_COLLATERAL``, else ``destructive``."""
    v = (value or os.environ.get(COLLATERAL_ENV) or DEFAULT_COLLATERAL).strip().lower()
    if v not in COLLATERAL_POLICIES:
        raise ValueError(f"collateral policy must be one of {', '.join(COLLATERAL_POLICIES)}, got {v!r}")
    return v  # type: ignore[return-value]


def _digest(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _flag_document(value: Any) -> dict[str, Any] | None:
    """A flag document (flagd's ``{"flags": {name: flag}}``), or None."""
    if not isinstance(value, str) or '"flags"' not in value:
        return None
    try:
        doc = json.loads(value)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("flags"), dict) else None


def config_keys(obj: dict[str, Any]) -> dict[str, str]:
    """A ConfigMap's or Secret's configuration at the grain of its keys: a digest per data key; a
    flag document is split per flag (``<data key>#<flag>``) with the rest under the data key, so
    that turning one flag off changes one key and reformatting the document changes none."""
    out: dict[str, str] = {}
    for section in ("data", "binaryData"):
        for k, v in (obj.get(section) or {}).items():
            doc = _flag_document(v) if section == "data" else None
            if doc is None:
                out[k] = _digest(v)
                continue
            out[k] = _digest({dk: dv for dk, dv in doc.items() if dk != "flags"})
            for name, flag in doc["flags"].items():
                out[f"{k}#{name}"] = _digest(flag)
    return out


def _template_digest(template: dict[str, Any]) -> str:
    """A pod template's digest, blind to the restart stamp and the ReplicaSet's hash label (so a
    Deployment's template and its ReplicaSets' templates compare equal)."""
    t = json.loads(json.dumps(template or {}))
    meta = t.get("metadata") or {}
    (meta.get("annotations") or {}).pop(RESTART_ANNOTATION, None)
    (meta.get("labels") or {}).pop("pod-template-hash", None)
    meta.pop("creationTimestamp", None)  # kubectl writes ``null`` there on a rollback
    for k in ("annotations", "labels"):
        if k in meta and not meta[k]:
            meta.pop(k)
    if "metadata" in t and not meta:
        t.pop("metadata")
    return _digest(t)


def _desired(obj: dict[str, Any]) -> tuple[str, int | None, str | None]:
    """(fingerprint, replicas, restart stamp) of an object's desired state."""
    kind = obj.get("kind", "")
    if kind in ("ConfigMap", "Secret"):
        return _digest({k: obj.get(k) for k in ("data", "binaryData", "stringData")}), None, None
    spec = json.loads(json.dumps(obj.get("spec") or {}))
    replicas: int | None = None
    stamp: str | None = None
    if kind in WORKLOAD_KINDS:
        replicas = int(spec.pop("replicas", 1)) if kind != "DaemonSet" else None
        ann = ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        stamp = ann.pop(RESTART_ANNOTATION, None)
    if kind == "Service":
        for k in ("clusterIP", "clusterIPs"):  # allocated by the API server
            spec.pop(k, None)
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return _digest({"spec": spec, "labels": labels}), replicas, stamp


def scheduling_keys(node: dict[str, Any]) -> dict[str, str]:
    """What on a Node decides where pods may run, a digest per field: its cordon
    (``spec.unschedulable``) and the taints people put on it (``spec.taints``; the node
    controller's own ``node.kubernetes.io/*`` taints follow the node's condition and are left out).
    Labels and annotations are not here: changing them is behaviour-neutral unless a selector
    names them."""
    spec = node.get("spec") or {}
    taints = sorted(
        (str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in spec.get("taints") or []
        if not str(t.get("key", "")).startswith("node.kubernetes.io/")
    )
    return {
        "spec.unschedulable": _digest(bool(spec.get("unschedulable"))),
        "spec.taints": _digest(taints),
    }


def _state(obj: dict[str, Any], endpoints: dict[str, int]) -> ObjectState:
    meta = obj.get("metadata") or {}
    kind = obj.get("kind", "")
    fp, replicas, stamp = _desired(obj)
    st = ObjectState(
        kind=kind,
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        owned=bool(meta.get("ownerReferences")),
        fingerprint=fp,
        replicas=replicas,
        restarted_at=stamp,
    )
    if kind in CONFIG_KINDS:
        st.keys = config_keys(obj)
    if kind == "Node":
        st.keys = scheduling_keys(obj)
    if kind in WORKLOAD_KINDS:
        status = obj.get("status") or {}
        st.ready_replicas = int(status.get("readyReplicas") or status.get("numberReady") or 0)
    if kind == "Deployment":
        st.template = _template_digest((obj.get("spec") or {}).get("template") or {})
    if kind == "Service":
        st.endpoints = endpoints.get(st.name, 0)
    if kind == "HorizontalPodAutoscaler":
        ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
        st.scale_target = f"{ref.get('kind', '')}/{ref.get('name', '')}"
        st.min_replicas = int((obj.get("spec") or {}).get("minReplicas") or 1)
    return st


def _ready_endpoints(api: KubeApi, namespace: str) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        items = api.list("v1", "Endpoints", namespace)
    except KubeApiError:
        return out
    for ep in items:
        n = sum(len(s.get("addresses") or []) for s in ep.get("subsets") or [])
        out[(ep.get("metadata") or {}).get("name", "")] = n
    return out


def _revision_history(api: KubeApi, namespace: str) -> dict[str, set[str]]:
    """Deployment name -> pod-template digests of the ReplicaSets it owns."""
    out: dict[str, set[str]] = {}
    try:
        items = api.list("apps/v1", "ReplicaSet", namespace)
    except KubeApiError:
        return out
    for rs in items:
        for ref in (rs.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("kind") == "Deployment" and ref.get("name"):
                digest = _template_digest((rs.get("spec") or {}).get("template") or {})
                out.setdefault(ref["name"], set()).add(digest)
    return out


def _list_served(
    api: KubeApi, api_version: str, kind: str, namespace: str | None = None
) -> list[dict[str, Any]]:
    """``kind``'s objects, or none where the cluster does not serve the kind (or hides it: 403)."""
    try:
        return api.list(api_version, kind, namespace)
    except KubeApiError as e:
        if e.code in (403, 404) or "not found" in str(e).lower():
            return []
        raise


def snapshot_objects(api: KubeApi, namespaces: Sequence[str]) -> dict[str, ObjectState]:
    """Every object of :data:`KINDS` in ``namespaces`` (a namespace that is gone has none) and of
    :data:`CLUSTER_KINDS`."""
    out: dict[str, ObjectState] = {}
    for ns in namespaces:
        endpoints = _ready_endpoints(api, ns)
        revisions = _revision_history(api, ns)
        for api_version, kind in KINDS:
            for obj in _list_served(api, api_version, kind, ns):
                obj.setdefault("kind", kind)
                st = _state(obj, endpoints)
                if st.template is not None:
                    st.history = sorted(revisions.get(st.name, set()) - {st.template})
                if kind == "Secret" and (obj.get("type") or "").startswith("kubernetes.io/service-account"):
                    continue
                out[st.key] = st
    for api_version, kind in CLUSTER_KINDS:
        for obj in _list_served(api, api_version, kind):
            obj.setdefault("kind", kind)
            st = _state(obj, {})
            out[st.key] = st
    return out


def snapshot_of(api: KubeApi, keys: Iterable[str], namespaces: Sequence[str]) -> dict[str, ObjectState]:
    """:func:`snapshot_objects` (over ``namespaces``) of the objects ``keys`` alone, one GET each
    (and, for a Service or a Deployment, its namespace's endpoints or ReplicaSets): the churn's
    post-fault changes update the baseline so, not with a listing of every kind."""
    api_versions = {kind: v for v, kind in KINDS}
    cluster_versions = {kind: v for v, kind in CLUSTER_KINDS}
    endpoints: dict[str, dict[str, int]] = {}
    revisions: dict[str, dict[str, set[str]]] = {}
    out: dict[str, ObjectState] = {}
    for key in keys:
        parts = key.split("/")  # namespace/Kind/name, or Kind/name of a cluster-scoped object
        if len(parts) == 3:
            ns, kind, name = parts
        elif len(parts) == 2:
            ns, (kind, name) = "", parts
        else:
            continue
        version = api_versions.get(kind) if ns else cluster_versions.get(kind)
        if version is None or (ns and ns not in namespaces):
            continue
        try:
            obj = api.get(version, kind, ns or None, name)
        except KubeApiError as e:
            if e.code in (403, 404) or "not found" in str(e).lower():
                continue
            raise
        obj.setdefault("kind", kind)
        if kind == "Secret" and (obj.get("type") or "").startswith("kubernetes.io/service-account"):
            continue
        if kind == "Service" and ns not in endpoints:
            endpoints[ns] = _ready_endpoints(api, ns)
        st = _state(obj, endpoints.get(ns, {}))
        if st.template is not None:
            if ns not in revisions:
                revisions[ns] = _revision_history(api, ns)
            st.history = sorted(revisions[ns].get(st.name, set()) - {st.template})
        out[st.key] = st
    return out


def prom_query(prometheus_url: str, query: str, at: float | None = None) -> list[dict[str, Any]]:
    """An instant query over the Prometheus HTTP API (``/api/v1/query``)."""
    # the scorer waits up to 60 s and asks the server for as long (capped by its own limit: 30 s on
    # the twin); the default query timeout (10 s on the twin) must not fail an episode's evaluation on
    # a busy machine
    params: dict[str, Any] = {"query": query, "timeout": "55s"}
    if at is not None:
        params["time"] = f"{at:.3f}"
    r = requests.get(prometheus_url.rstrip("/") + "/api/v1/query", params=params, timeout=60)
    r.raise_for_status()
    body = r.json()
    if body.get("status") != "success":
        raise RuntimeError(f"query {query!r}: {body.get('error') or body}")
    result = (body.get("data") or {}).get("result") or []
    return list(result) if isinstance(result, list) else []


def _ns_matcher(namespaces: Sequence[str]) -> str:
    return "|".join(sorted(namespaces))


def request_rates(prometheus_url: str, namespaces: Sequence[str], at: float) -> dict[str, float]:
    """Server requests/s per service over the last :data:`RATE_WINDOW` (span metrics)."""
    q = (
        "sum by (service_name) (rate(traces_span_metrics_calls_total{"
        f'namespace=~"{_ns_matcher(namespaces)}", span_kind="SPAN_KIND_SERVER", '
        f'service_name!~"{EXCLUDED_SERVICES}"}}[{RATE_WINDOW}]))'
    )
    out: dict[str, float] = {}
    for s in prom_query(prometheus_url, q, at):
        try:
            v = float(s["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if v == v:  # not NaN
            out[(s.get("metric") or {}).get("service_name", "")] = round(v, 4)
    return out


def fresh_samples(prometheus_url: str, namespaces: Sequence[str], at: float) -> int:
    """Span-metric samples scraped in the last :data:`FRESH_S` seconds."""
    q = (
        f'sum(count_over_time(traces_span_metrics_calls_total{{namespace=~"{_ns_matcher(namespaces)}"}}'
        f"[{FRESH_S}s]))"
    )
    res = prom_query(prometheus_url, q, at)
    try:
        return int(float(res[0]["value"][1])) if res else 0
    except (KeyError, IndexError, TypeError, ValueError):
        return 0


def alert_identity(labels: dict[str, str]) -> str:
    name = labels.get("alertname", "?")
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "alertname")
    return f"{name}{{{inner}}}" if inner else name


def active_alerts(prometheus_url: str, namespaces: Iterable[str]) -> dict[str, str]:
    """Alerts of ``namespaces`` that are firing or pending: identity → state."""
    r = requests.get(prometheus_url.rstrip("/") + "/api/v1/alerts", timeout=30)
    r.raise_for_status()
    ns = set(namespaces)
    out: dict[str, str] = {}
    for a in (r.json().get("data") or {}).get("alerts") or []:
        labels = a.get("labels") or {}
        if a.get("state") not in ("firing", "pending") or labels.get("namespace") not in ns:
            continue
        ident = alert_identity(labels)
        if out.get(ident) != "firing":
            out[ident] = a["state"]
    return out


# ---------------------------------------------------------------------------- footprint
def fault_footprint(faults: Sequence[Operation]) -> Footprint:
    """The objects the fault operations touch (injection data, not the diagnosis)."""
    objs: list[str] = []
    replicas: list[str] = []
    keys: list[str] = []
    for op in faults:
        if isinstance(op, CreateOp):
            m = op.object.get("metadata") or {}
            objs.append(object_key(op.object["kind"], m.get("namespace"), m["name"]))
            if op.object["kind"] == "HorizontalPodAutoscaler":
                ref = (op.object.get("spec") or {}).get("scaleTargetRef") or {}
                if ref.get("name"):
                    replicas.append(
                        object_key(ref.get("kind", "Deployment"), m.get("namespace"), ref["name"])
                    )
        elif isinstance(op, PatchOp | DeleteOp):
            t = op.target
            key = object_key(t.kind, t.namespace, t.name)
            data_keys = (
                _patched_keys(op.patch) if isinstance(op, PatchOp) and t.kind in CONFIG_KINDS else None
            )
            if data_keys is None:
                objs.append(key)
            else:
                keys.extend(f"{key}:{k}" for k in data_keys)
            if isinstance(op, PatchOp) and t.kind in WORKLOAD_KINDS and _sets_replicas(op.patch):
                replicas.append(key)
        elif isinstance(op, FlagOp):
            keys.append(f"{object_key('ConfigMap', op.namespace, op.configmap)}:{op.key}#{op.name}")
        elif isinstance(op, RestartOp):
            objs.append(object_key(op.kind, op.namespace, op.name))
    whole = set(objs)
    return Footprint(
        objects=sorted(whole),
        replicas=sorted(set(replicas)),
        keys=sorted({k for k in keys if k.split(":", 1)[0] not in whole}),
    )


DATA_SECTIONS = ("data", "binaryData", "stringData")


def _patched_keys(patch: dict[str, Any] | list[dict[str, Any]]) -> list[str] | None:
    """The data keys a ConfigMap or Secret patch sets, or None when it may change more (then the
    whole object is in the footprint)."""
    out: list[str] = []
    if isinstance(patch, list):  # JSON patch: every path must name one data key
        for p in patch:
            parts = str(p.get("path", "")).split("/")
            if len(parts) != 3 or parts[0] or parts[1] not in DATA_SECTIONS:
                return None
            out.append(parts[2].replace("~1", "/").replace("~0", "~"))
        return out
    if set(patch) - {*DATA_SECTIONS, "metadata"}:
        return None
    for section in DATA_SECTIONS:
        value = patch.get(section)
        if value is None:
            continue
        if not isinstance(value, dict):
            return None
        out.extend(value)
    return out


def _sets_replicas(patch: dict[str, Any] | list[dict[str, Any]]) -> bool:
    if isinstance(patch, list):
        return any(str(p.get("path", "")).startswith("/spec/replicas") for p in patch)
    return "replicas" in (patch.get("spec") or {})


# ---------------------------------------------------------------------------- baseline
def take_baseline(
    api: KubeApi,
    prometheus_url: str | None,
    namespaces: Sequence[str],
    now: float,
    journeys: Sequence[JourneyState] = (),
    pipeline: Sequence[str] = (),
) -> Baseline:
    """The baseline, over the wire (Kubernetes API + Prometheus API)."""
    base = Baseline(
        taken_at=now,
        namespaces=list(namespaces),
        objects=snapshot_objects(api, namespaces),
        journeys=list(journeys),
        pipeline=list(pipeline),
    )
    if prometheus_url:
        base.alerts_active = sorted(active_alerts(prometheus_url, namespaces))
        try:
            base.request_rates = request_rates(prometheus_url, namespaces, now)
            base.total_request_rate = round(sum(base.request_rates.values()), 4)
        except (requests.RequestException, RuntimeError):
            base.request_rates = None
    return base


# ---------------------------------------------------------------------------- end state
def diff_objects(
    base: dict[str, ObjectState], now: dict[str, ObjectState], footprint: Footprint
) -> tuple[list[CollateralChange], list[str]]:
    """(collateral changes outside the footprint, workloads only restarted)."""
    exempt = set(footprint.objects)
    out: list[CollateralChange] = []
    restarted: list[str] = []
    for key, b in sorted(base.items()):
        if key in exempt:
            continue
        e = now.get(key)
        if e is None:
            out.append(CollateralChange(object=key, change="deleted"))
            continue
        if b.uid and e.uid and b.uid != e.uid:
            out.append(CollateralChange(object=key, change="recreated", detail="new uid"))
            continue
        if b.replicas is not None and e.replicas is not None and e.replicas != b.replicas:
            change: Literal["scaled_down", "scaled_up"] = (
                "scaled_down" if e.replicas < b.replicas else "scaled_up"
            )
            out.append(
                CollateralChange(object=key, change=change, detail=f"replicas {b.replicas} → {e.replicas}")
            )
        if e.template and e.template != b.template and e.template in b.history:
            out.append(
                CollateralChange(
                    object=key, change="rolled_back", detail="pod template of an earlier revision"
                )
            )
        elif e.fingerprint != b.fingerprint:
            if b.kind == "Node" and b.keys:
                fields = sorted(k for k in b.keys if e.keys.get(k) != b.keys[k])
                detail = "cordon or taints changed" if fields else "labels or other fields changed"
                out.append(CollateralChange(object=key, change="modified", detail=detail, keys=fields))
            elif b.kind in CONFIG_KINDS and (b.keys or e.keys):
                c = _key_changes(key, b.keys, e.keys, footprint)
                if c is not None:
                    out.append(c)
            else:
                out.append(CollateralChange(object=key, change="modified", detail="desired state changed"))
        elif e.restarted_at != b.restarted_at:
            restarted.append(key)
    for key in sorted(set(now) - set(base) - exempt):
        if not now[key].owned:  # a Schedule's experiments, a CronJob's Jobs: the controller's doing
            out.append(CollateralChange(object=key, change="created"))
    return out, restarted


def _key_changes(
    obj: str, base: dict[str, str], now: dict[str, str], footprint: Footprint
) -> CollateralChange | None:
    """The keys of configuration object ``obj`` changed, removed or added outside the footprint."""
    changed = sorted(k for k in base if k in now and now[k] != base[k] and not footprint.covers(obj, k))
    removed = sorted(k for k in base if k not in now and not footprint.covers(obj, k))
    added = sorted(k for k in now if k not in base and not footprint.covers(obj, k))
    if not (changed or removed or added):
        return None
    parts = [
        f"{what}: {', '.join(ks)}"
        for what, ks in (("changed", changed), ("removed", removed), ("added", added))
        if ks
    ]
    return CollateralChange(
        object=obj, change="modified", detail="keys " + "; ".join(parts), keys=sorted(changed + removed)
    )


def destructive(change: CollateralChange) -> bool:
    """What the default policy fails: deleting any baseline object outside the footprint, scaling a
    workload down, rolling a workload back to an earlier revision (undoing a healthy release),
    changing or removing a configuration key the fault did not set (a flag that was on for a
    reason, another service's setting), or cordoning, uncordoning or tainting a node the fault did
    not touch (where pods may run; its labels are neutral)."""
    kind = change.object.split("/")[-2]
    if change.change == "deleted" or (change.change == "modified" and change.keys):
        return True
    return change.change in ("scaled_down", "rolled_back") and kind in WORKLOAD_KINDS


def assess(
    baseline: Baseline,
    api: KubeApi,
    prometheus_url: str | None,
    now: float,
    journeys: Sequence[JourneyState],
    footprint: Footprint,
    policy: CollateralPolicy = DEFAULT_COLLATERAL,
) -> EndState:
    """The end-state checks (see the module docstring)."""
    ns = baseline.namespaces
    es = EndState(collateral_policy=policy, journeys=list(journeys))
    objects = snapshot_objects(api, ns)

    # alerts
    if prometheus_url:
        active = active_alerts(prometheus_url, ns)
        known = set(baseline.alerts_active)
        new = sorted(k for k, v in active.items() if k not in known and v == "firing")
        pending = sorted(k for k, v in active.items() if k not in known and v == "pending")
        es.alerts_new = new
        note = f"; pending (not counted): {', '.join(pending)}" if pending else ""
        es.checks.append(
            EndStateCheck(
                name="alerts",
                ok=not new,
                detail=(
                    "still firing: " + ", ".join(new)
                    if new
                    else f"no new alert firing ({len(known)} active at baseline)"
                )
                + note,
            )
        )
    else:
        es.checks.append(EndStateCheck(name="alerts", ok=None, detail="no Prometheus endpoint"))

    # journeys
    bad = [j for j in journeys if not j.ok]
    es.checks.append(
        EndStateCheck(
            name="journeys",
            ok=(not bad) if journeys else None,
            detail=(
                "; ".join(f"{j.name}: {j.detail}" for j in bad)
                if bad
                else (f"{len(journeys)} journey(s) pass" if journeys else "the app declares no journey")
            ),
        )
    )

    # traffic
    if prometheus_url and baseline.total_request_rate:
        rates = request_rates(prometheus_url, ns, now)
        total = sum(rates.values())
        es.traffic_ratio = round(total / baseline.total_request_rate, 3)
        es.checks.append(
            EndStateCheck(
                name="traffic",
                ok=es.traffic_ratio >= TRAFFIC_MIN_RATIO,
                detail=(
                    f"{total:.1f} req/s = {es.traffic_ratio:.0%} of the baseline "
                    f"{baseline.total_request_rate:.1f} req/s (needs ≥ {TRAFFIC_MIN_RATIO:.0%})"
                ),
            )
        )
    else:
        es.checks.append(
            EndStateCheck(name="traffic", ok=None, detail="no baseline request rate to compare with")
        )

    # observability
    problems: list[str] = []
    for name in baseline.pipeline:
        wl = next(
            (
                objects.get(object_key(k, n, name))
                for n in ns
                for k in WORKLOAD_KINDS
                if objects.get(object_key(k, n, name))
            ),
            None,
        )
        if wl is None:
            problems.append(f"telemetry pipeline workload {name} is missing")
        elif not wl.ready_replicas:
            problems.append(f"telemetry pipeline workload {name} has no ready pods")
    fresh: int | None = None
    if prometheus_url:
        fresh = fresh_samples(prometheus_url, ns, now)
        if fresh <= 0:
            problems.append(f"no span-metric samples in the last {FRESH_S} s")
    es.checks.append(
        EndStateCheck(
            name="observability",
            ok=not problems if (prometheus_url or baseline.pipeline) else None,
            detail="; ".join(problems)
            or f"pipeline {', '.join(baseline.pipeline) or '-'} running; {fresh} fresh samples",
        )
    )

    # inventory
    floor_exempt = set(footprint.replicas)
    hpa_floor: dict[str, int] = {}
    for o in objects.values():
        if o.kind == "HorizontalPodAutoscaler" and o.scale_target:
            hpa_floor[f"{o.namespace}/{o.scale_target}"] = o.min_replicas or 1
    for key, b in sorted(baseline.objects.items()):
        if b.kind not in INVENTORY_KINDS:
            continue
        e = objects.get(key)
        if e is None:
            es.missing.append(key)
            continue
        if b.replicas is None or e.replicas is None or key in floor_exempt:
            continue
        floor = min(b.replicas, hpa_floor.get(key, b.replicas))
        if e.replicas < floor:
            es.scaled_down.append(f"{key} ({b.replicas} → {e.replicas})")
    inv = [f"missing: {', '.join(es.missing)}"] if es.missing else []
    if es.scaled_down:
        inv.append(f"below baseline replicas: {', '.join(es.scaled_down)}")
    es.checks.append(
        EndStateCheck(
            name="inventory",
            ok=not inv,
            detail="; ".join(inv) or f"{len(baseline.objects)} baseline object(s) present at their scale",
        )
    )

    # collateral damage
    es.collateral, es.restarted = diff_objects(baseline.objects, objects, footprint)
    if policy == "report":
        failing: list[CollateralChange] = []
    elif policy == "any":
        failing = list(es.collateral)
    else:
        failing = [c for c in es.collateral if destructive(c)]
    summary = ", ".join(f"{c.object} {c.change}" for c in es.collateral)
    es.checks.append(
        EndStateCheck(
            name="collateral",
            ok=not failing,
            detail=(f"policy {policy}: " + (summary or "no change outside the fault's footprint")),
        )
    )
    return es
