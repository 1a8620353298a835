"""The resource types the twin's API server knows: built-in kinds plus CRD-defined ones.

A :class:`ResourceRegistry` belongs to one twin (``registry_for(twin)``) and follows its store:
creating a ``CustomResourceDefinition`` adds the custom resource, deleting it removes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError
from .store import ChangeEvent, GroupResource, Obj

CRD_GR = GroupResource("apiextensions.k8s.io", "customresourcedefinitions")

_ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_READ = ("get", "list")


@dataclass(frozen=True)
class ResourceInfo:
    """One served (group, version, resource)."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = _ALL
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    singular: str = ""
    list_kind: str = ""
    model: str | None = None
    """Name of the ``kubernetes.client.models`` class describing the kind (None for custom resources)."""
    crd: Obj | None = field(default=None, compare=False, hash=False)
    """The defining CRD (custom resources only)."""

    @property
    def gr(self) -> GroupResource:
        return GroupResource(self.group, self.resource)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def list_kind_name(self) -> str:
        return self.list_kind or f"{self.kind}List"

    @property
    def crd_version(self) -> Obj:
        """The CRD's ``spec.versions`` entry for this version ({} when there is none, or no CRD)."""
        crd = self.crd or {}
        return next((v for v in crd.get("spec", {}).get("versions", []) if v.get("name") == self.version), {})


def _r(
    gv: str,
    resource: str,
    kind: str,
    namespaced: bool = True,
    short: str = "",
    cats: str = "",
    subs: str = "",
    verbs: tuple[str, ...] = _ALL,
    model: str | None = "",
) -> ResourceInfo:
    group, _, version = gv.rpartition("/")
    if model == "":
        prefix = version[0].upper() + version[1:]
        model = f"{prefix}{kind}"
    return ResourceInfo(
        group=group,
        version=version,
        resource=resource,
        kind=kind,
        namespaced=namespaced,
        verbs=verbs,
        short_names=tuple(short.split()) if short else (),
        categories=tuple(cats.split()) if cats else (),
        subresources=tuple(subs.split()) if subs else (),
        model=model,
    )


_NO_UPDATE = ("create", "delete", "get", "list", "patch", "watch")

BUILTIN: tuple[ResourceInfo, ...] = (
    # core/v1
    _r("v1", "bindings", "Binding", verbs=("create",)),
    _r("v1", "componentstatuses", "ComponentStatus", False, "cs", verbs=_READ),
    _r("v1", "configmaps", "ConfigMap", short="cm"),
    _r("v1", "endpoints", "Endpoints", short="ep"),
    _r("v1", "events", "Event", short="ev", model="CoreV1Event"),
    _r("v1", "limitranges", "LimitRange", short="limits"),
    _r(
        "v1",
        "namespaces",
        "Namespace",
        False,
        "ns",
        subs="finalize status",
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    ),
    _r("v1", "nodes", "Node", False, "no", subs="proxy status"),
    _r("v1", "persistentvolumeclaims", "PersistentVolumeClaim", short="pvc", subs="status"),
    _r("v1", "persistentvolumes", "PersistentVolume", False, "pv", subs="status"),
    _r(
        "v1",
        "pods",
        "Pod",
        short="po",
        cats="all",
        subs="attach binding ephemeralcontainers eviction exec log portforward proxy resize status",
    ),
    _r("v1", "podtemplates", "PodTemplate"),
    _r("v1", "replicationcontrollers", "ReplicationController", short="rc", cats="all", subs="scale status"),
    _r("v1", "resourcequotas", "ResourceQuota", short="quota", subs="status"),
    _r("v1", "secrets", "Secret"),
    _r("v1", "serviceaccounts", "ServiceAccount", short="sa", subs="token"),
    _r("v1", "services", "Service", short="svc", cats="all", subs="proxy status"),
    # apps/v1
    _r("apps/v1", "controllerrevisions", "ControllerRevision"),
    _r("apps/v1", "daemonsets", "DaemonSet", short="ds", cats="all", subs="status"),
    _r("apps/v1", "deployments", "Deployment", short="deploy", cats="all", subs="scale status"),
    _r("apps/v1", "replicasets", "ReplicaSet", short="rs", cats="all", subs="scale status"),
    _r("apps/v1", "statefulsets", "StatefulSet", short="sts", cats="all", subs="scale status"),
    # autoscaling/v2
    _r(
        "autoscaling/v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        short="hpa",
        cats="all",
        subs="status",
    ),
    _r(
        "autoscaling/v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        short="hpa",
        cats="all",
        subs="status",
    ),
    # batch/v1
    _r("batch/v1", "cronjobs", "CronJob", short="cj", cats="all", subs="status"),
    _r("batch/v1", "jobs", "Job", cats="all", subs="status"),
    # networking.k8s.io/v1
    _r("networking.k8s.io/v1", "ingressclasses", "IngressClass", False),
    _r("networking.k8s.io/v1", "ingresses", "Ingress", short="ing", subs="status"),
    _r("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", short="netpol"),
    # discovery / events
    _r("discovery.k8s.io/v1", "endpointslices", "EndpointSlice"),
    _r("events.k8s.io/v1", "events", "Event", short="ev", model="EventsV1Event"),
    # rbac
    _r("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    _r("rbac.authorization.k8s.io/v1", "roles", "Role"),
    # authentication / authorization reviews (create-only; served by auth/reviews.py)
    _r("authentication.k8s.io/v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=("create",)),
    _r("authentication.k8s.io/v1", "tokenreviews", "TokenReview", False, verbs=("create",)),
    _r("authorization.k8s.io/v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", verbs=("create",)),
    _r(
        "authorization.k8s.io/v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        False,
        verbs=("create",),
    ),
    _r(
        "authorization.k8s.io/v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        False,
        verbs=("create",),
    ),
    _r("authorization.k8s.io/v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=("create",)),
    # policy, storage, scheduling, coordination
    _r("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", short="pdb", subs="status"),
    _r("storage.k8s.io/v1", "storageclasses", "StorageClass", False, "sc"),
    _r("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False, "pc"),
    _r("coordination.k8s.io/v1", "leases", "Lease"),
    # CRDs
    _r(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        "crd crds",
        cats="api-extensions",
        subs="status",
    ),
    # metrics.k8s.io (read-only, computed from the runtime's usage)
    _r("metrics.k8s.io/v1beta1", "nodes", "NodeMetrics", False, verbs=_READ, model=None),
    _r("metrics.k8s.io/v1beta1", "pods", "PodMetrics", verbs=_READ, model=None),
)

# The subresource → (group, version, kind) a subresource speaks, when not the parent's kind.
SUBRESOURCE_KINDS: dict[str, tuple[str, str, str]] = {
    "scale": ("autoscaling", "v1", "Scale"),
    "eviction": ("policy", "v1", "Eviction"),
    "binding": ("", "v1", "Binding"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
    "exec": ("", "v1", "PodExecOptions"),
    "attach": ("", "v1", "PodAttachOptions"),
    "portforward": ("", "v1", "PodPortForwardOptions"),
}

# Group order for discovery (as a real apiserver lists them).
GROUP_ORDER = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "metrics.k8s.io",
)


def no_match(kind: str, api_version: str) -> ApiError:
    return ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')


class ResourceRegistry:
    """Lookup of served resources by (group, version, resource), by kind and by short name."""

    def __init__(self, builtin: Iterable[ResourceInfo] = BUILTIN) -> None:
        self._builtin = list(builtin)
        self._custom: dict[str, list[ResourceInfo]] = {}  # CRD name → its served versions
        self.generation = 0
        """Grows whenever the set of served resources changes (caches key on it)."""
        self._rebuild()

    # ------------------------------------------------------------------ index
    def _rebuild(self) -> None:
        self.generation += 1
        infos = list(self._builtin)
        for crd_infos in self._custom.values():
            infos.extend(crd_infos)
        self._all = infos
        self._by_gvr = {(i.group, i.version, i.resource): i for i in infos}
        self._by_gvk: dict[tuple[str, str, str], ResourceInfo] = {}
        for i in infos:
            self._by_gvk.setdefault((i.group, i.version, i.kind), i)

    def all(self) -> list[ResourceInfo]:
        return list(self._all)

    def group_versions(self) -> dict[str, list[str]]:
        """group → served versions, preferred first."""
        out: dict[str, list[str]] = {}
        for i in self._all:
            vs = out.setdefault(i.group, [])
            if i.version not in vs:
                vs.append(i.version)
        for g, vs in out.items():
            out[g] = sorted(vs, key=version_priority)
        order = {g: n for n, g in enumerate(GROUP_ORDER)}
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def resources_in(self, group: str, version: str) -> list[ResourceInfo]:
        return [i for i in self._all if i.group == group and i.version == version]

    # ------------------------------------------------------------------ lookups
    def get(self, group: str, version: str, resource: str) -> ResourceInfo | None:
        return self._by_gvr.get((group, version, resource))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceInfo | None:
        return self._by_gvk.get((group, version, kind))

    def by_short_name(self, name: str) -> ResourceInfo | None:
        name = name.lower()
        for i in self._all:
            if name in i.short_names or name in (i.resource, i.singular_name, i.kind.lower()):
                return i
        return None

    def preferred(self, gr: GroupResource) -> ResourceInfo | None:
        cands = [i for i in self._all if i.gr == gr]
        if not cands:
            return None
        return sorted(cands, key=lambda i: version_priority(i.version))[0]

    def for_object(self, obj: Obj) -> ResourceInfo:
        """The resource an object with ``apiVersion``/``kind`` belongs to (404 'no matches for kind')."""
        api_version = str(obj.get("apiVersion") or "")
        kind = str(obj.get("kind") or "")
        group, _, version = api_version.rpartition("/")
        info = self._by_gvk.get((group, version, kind))
        if info is None:
            raise no_match(kind, api_version)
        return info

    # ------------------------------------------------------------------ CRDs
    def on_change(self, ev: ChangeEvent) -> None:
        """Store listener: keep custom resources in step with CRDs."""
        if ev.gr != CRD_GR:
            return
        name = ev.name
        if ev.type == "DELETED" or ev.obj.get("metadata", {}).get("deletionTimestamp"):
            if self._custom.pop(name, None) is not None:
                self._rebuild()
            return
        infos = infos_from_crd(ev.obj)
        if infos != self._custom.get(name):
            self._custom[name] = infos
            self._rebuild()

    def load_crds(self, crds: Iterable[Obj]) -> None:
        for crd in crds:
            self._custom[crd["metadata"]["name"]] = infos_from_crd(crd)
        self._rebuild()


def infos_from_crd(crd: Obj) -> list[ResourceInfo]:
    spec = crd.get("spec", {}) or {}
    names = spec.get("names", {}) or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    kind = str(names.get("kind", ""))
    out = []
    for v in spec.get("versions", []) or []:
        if not v.get("served", True):
            continue
        subs = tuple(sorted(k for k in (v.get("subresources") or {}) if k in ("status", "scale")))
        out.append(
            ResourceInfo(
                group=group,
                version=str(v.get("name", "")),
                resource=plural,
                kind=kind,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subs,
                singular=str(names.get("singular") or kind.lower()),
                list_kind=str(names.get("listKind") or f"{kind}List"),
                model=None,
                crd=crd,
            )
        )
    return out


def version_priority(v: str) -> tuple[int, int, int]:
    """Kubernetes' version ordering: GA > beta > alpha, then higher numbers first."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)


def registry_for(twin: Any) -> ResourceRegistry:
    """The (cached) registry of ``twin``; subscribes to its store so CRDs come and go."""
    reg = getattr(twin, "_resource_registry", None)
    if reg is None:
        reg = ResourceRegistry()
        reg.load_crds(twin.store.list(CRD_GR))
        twin.store.subscribe(reg.on_change)
        twin._resource_registry = reg
    return reg  # type: ignore[no-any-return]
