"""Kubernetes' kind tables: a resource type (:class:`GroupResource`), what one served
(group, version, resource) is (:class:`ResourceInfo`), the built-in kinds of the API server with
their plurals, short names, categories, subresources and verbs (:data:`BUILTIN`, as
``kubectl api-resources`` lists them), and the Chaos Mesh kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

Obj = dict[str, Any]


class GroupResource(NamedTuple):
    """A resource type, e.g. ``GroupResource("apps", "deployments")``; core group is ``""``. A
    named tuple: every store operation and change event hashes and compares one, in C (a frozen
    dataclass's ``__eq__`` and ``__hash__`` are Python calls: a FinOps week made 500,000)."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


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


CHAOS_MESH_GROUP = "chaos-mesh.org"
CHAOS_MESH_VERSION = "v1alpha1"
CHAOS_MESH_KINDS = {
    "NetworkChaos": "networkchaos",
    "HTTPChaos": "httpchaos",
    "StressChaos": "stresschaos",
    "PodChaos": "podchaos",
    "JVMChaos": "jvmchaos",
    "Schedule": "schedules",
}
"""Chaos Mesh's kinds (the ones the scenarios use) and their plurals."""
