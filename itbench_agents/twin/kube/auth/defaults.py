"""The default ClusterRoles and ClusterRoleBindings a kube-apiserver bootstraps (``bootstrappolicy``).

Only the user-facing ones and those the review APIs need: ``cluster-admin``, the aggregated
``admin`` / ``edit`` / ``view`` (with the ``system:aggregate-to-*`` roles they aggregate),
``system:discovery``, ``system:basic-user``, ``system:public-info-viewer`` and
``system:auth-delegator``. Rules follow Kubernetes 1.32's ``policy.go``.
"""

from __future__ import annotations

import uuid
from typing import Any

from ....k8s.kinds import GroupResource
from ....k8s.times import rfc3339
from ..store import Obj

RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = GroupResource(RBAC, "clusterroles")
CLUSTER_ROLE_BINDINGS = GroupResource(RBAC, "clusterrolebindings")

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
AGG = "rbac.authorization.k8s.io/aggregate-to-"


def rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Obj:
    out: Obj = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    return out


def url_rule(verbs: list[str], urls: list[str]) -> Obj:
    return {"verbs": list(verbs), "nonResourceURLs": list(urls)}


def _role(name: str, rules: list[Obj], labels: dict[str, str] | None = None, aggregate: str = "") -> Obj:
    obj: Obj = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {**LABELS, **(labels or {})}, "annotations": dict(ANNOTATIONS)},
        "rules": rules,
    }
    if aggregate:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGG + aggregate: "true"}}]}
    return obj


def _binding(name: str, role: str, groups: list[str]) -> Obj:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": dict(LABELS), "annotations": dict(ANNOTATIONS)},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups],
    }


DISCOVERY_URLS = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
]
PUBLIC_INFO_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

_VIEW = [
    rule(
        READ,
        [""],
        [
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ],
    ),
    rule(
        READ,
        [""],
        [
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
    ),
    rule(READ, [""], ["namespaces"]),
    rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    rule(
        READ,
        ["apps"],
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
    ),
    rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    rule(
        READ,
        ["extensions"],
        [
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
        ],
    ),
    rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
]

_EDIT = [
    rule(
        READ,
        [""],
        ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
    ),
    rule(["impersonate"], [""], ["serviceaccounts"]),
    rule(WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    rule(["create"], [""], ["pods/eviction"]),
    rule(
        WRITE,
        [""],
        [
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
    ),
    rule(["create"], [""], ["serviceaccounts/token"]),
    rule(
        WRITE,
        ["apps"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
    ),
    rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    rule(WRITE, ["batch"], ["cronjobs", "jobs"]),
    rule(
        WRITE,
        ["extensions"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ],
    ),
    rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    rule(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    rule(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
]

_ADMIN = [
    rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    rule(READ_WRITE, [RBAC], ["rolebindings", "roles"]),
]


def aggregated_rules(role: Obj, roles: list[Obj]) -> list[Obj]:
    """The rules of an aggregated ClusterRole: those of every other ClusterRole its
    ``aggregationRule.clusterRoleSelectors`` select (in name order, duplicates dropped)."""
    from ..selectors import labels_match, selector_from_label_selector

    selectors = [
        selector_from_label_selector(s)
        for s in ((role.get("aggregationRule") or {}).get("clusterRoleSelectors") or [])
        if isinstance(s, dict)
    ]
    out: list[Obj] = []
    me = role["metadata"]["name"]
    for other in sorted(roles, key=lambda r: str(r["metadata"].get("name", ""))):
        if other["metadata"].get("name") == me:
            continue
        if not any(sel and labels_match(sel, other) for sel in selectors):
            continue
        for r in other.get("rules") or []:
            if r not in out:
                out.append(r)
    return out


def default_objects() -> list[tuple[GroupResource, Obj]]:
    """The bootstrap ClusterRoles (aggregated rules filled in, as the aggregation controller does)
    and ClusterRoleBindings."""
    roles = [
        _role("cluster-admin", [rule(["*"], ["*"], ["*"]), url_rule(["*"], ["*"])]),
        _role("system:discovery", [url_rule(["get"], DISCOVERY_URLS)]),
        _role("system:public-info-viewer", [url_rule(["get"], PUBLIC_INFO_URLS)]),
        _role(
            "system:basic-user",
            [
                rule(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
            ],
        ),
        _role(
            "system:auth-delegator",
            [
                rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            ],
        ),
        _role("system:aggregate-to-view", _VIEW, {AGG + "view": "true"}),
        _role("system:aggregate-to-edit", _EDIT, {AGG + "edit": "true"}),
        _role("system:aggregate-to-admin", _ADMIN, {AGG + "admin": "true"}),
        # what metrics-server installs with itself (the twin serves metrics.k8s.io)
        _role(
            "system:aggregated-metrics-reader",
            [rule(READ, ["metrics.k8s.io"], ["nodes", "pods"])],
            {AGG + "view": "true", AGG + "edit": "true", AGG + "admin": "true"},
        ),
        _role("view", [], {AGG + "edit": "true"}, aggregate="view"),
        _role("edit", [], {AGG + "admin": "true"}, aggregate="edit"),
        _role("admin", [], aggregate="admin"),
    ]
    by_name = {r["metadata"]["name"]: r for r in roles}
    for name in ("view", "edit", "admin"):  # what the clusterrole-aggregation controller writes
        by_name[name]["rules"] = aggregated_rules(by_name[name], roles)
    bindings = [
        _binding("cluster-admin", "cluster-admin", ["system:masters"]),
        _binding("system:discovery", "system:discovery", ["system:authenticated"]),
        _binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            ["system:authenticated", "system:unauthenticated"],
        ),
    ]
    return [(CLUSTER_ROLES, r) for r in roles] + [(CLUSTER_ROLE_BINDINGS, b) for b in bindings]


def install_defaults(store: Any, created: float) -> int:
    """Put the bootstrap policy into ``store`` (skipping objects that exist); returns how many were added.

    Deterministic and without drawing from the store's random generator (the uids are name-based), so
    installing it does not change the names or uids of anything created later."""
    added = 0
    with store.lock:
        for gr, obj in default_objects():
            name = obj["metadata"]["name"]
            if store.get(gr, "", name) is not None:
                continue
            obj["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"itbench-twin:{gr}:{name}"))
            obj["metadata"]["creationTimestamp"] = rfc3339(created)
            obj["metadata"]["generation"] = 1
            store._commit(gr, "ADDED", obj)
            added += 1
    return added
