"""What a CISO agent's credential may do (issue 28): read the cluster to collect evidence — workloads,
RBAC, policies, reports; no Secrets — and, in the Kyverno classes, create, edit or delete Kyverno
ClusterPolicies and Policies. Nothing else is writable: not the injected workloads, not
PolicyExceptions, not Kyverno itself. A ``k8s-opa`` agent only reads (its answer is files).

These are the rules; the harness provisions them (``harness.access.grant_access``) as a ClusterRole
bound to the agent's ServiceAccount, through the public API, so they hold on a live cluster too.
"""

from __future__ import annotations

from typing import Any

READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete"]
CORE_READABLE = [
    "pods", "pods/log", "services", "endpoints", "configmaps", "persistentvolumeclaims", "persistentvolumes",
    "serviceaccounts", "namespaces", "nodes", "events", "resourcequotas", "limitranges", "replicationcontrollers",
]  # fmt: skip
GROUPS_READABLE = [
    "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "discovery.k8s.io", "events.k8s.io",
    "rbac.authorization.k8s.io", "storage.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io",
    "kyverno.io", "wgpolicyk8s.io", "reports.kyverno.io",
]  # fmt: skip


SELF_REVIEW = {
    "apiGroups": ["authorization.k8s.io"],
    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    "verbs": ["create"],
}


def read_rules() -> list[dict[str, Any]]:
    """Read what evidence needs (no Secrets), nothing else."""
    return [
        {"apiGroups": [""], "resources": CORE_READABLE, "verbs": READ},
        {"apiGroups": GROUPS_READABLE, "resources": ["*"], "verbs": READ},
    ]


def ciso_cluster_rules(task_class: str = "kyverno") -> list[dict[str, Any]]:
    """The agent's rules for a scenario class: ``k8s-opa`` and ``rhel-opa`` read only; the Kyverno
    classes also write Kyverno policies."""
    if task_class in ("k8s-opa", "rhel-opa"):
        return [*read_rules(), SELF_REVIEW]
    return [
        *read_rules(),
        {"apiGroups": ["kyverno.io"], "resources": ["clusterpolicies", "policies"], "verbs": WRITE},
        SELF_REVIEW,
    ]
