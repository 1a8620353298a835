"""What a CISO agent's credential may do (issue 28): read the cluster to collect evidence — workloads,
RBAC, policies, reports; no Secrets — and create, edit or delete Kyverno ClusterPolicies and Policies.
Nothing else is writable: not the injected workloads, not PolicyExceptions, not Kyverno itself.

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


def ciso_cluster_rules() -> list[dict[str, Any]]:
    return [
        {"apiGroups": [""], "resources": CORE_READABLE, "verbs": READ},
        {"apiGroups": GROUPS_READABLE, "resources": ["*"], "verbs": READ},
        {"apiGroups": ["kyverno.io"], "resources": ["clusterpolicies", "policies"], "verbs": WRITE},
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            "verbs": ["create"],
        },
    ]
