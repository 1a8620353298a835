"""apiVersion of the kinds ground-truth groups name (for lookups through the Kubernetes API)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..k8s.client import KubeApiError

if TYPE_CHECKING:
    from ..k8s.client import KubeApi
    from .spec import Group

API_VERSION_OF_KIND: dict[str, str] = {
    "Pod": "v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Namespace": "v1",
    "Node": "v1",
    "PersistentVolumeClaim": "v1",
    "ResourceQuota": "v1",
    "LimitRange": "v1",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "HorizontalPodAutoscaler": "autoscaling/v2",
    "NetworkPolicy": "networking.k8s.io/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "NetworkChaos": "chaos-mesh.org/v1alpha1",
    "HTTPChaos": "chaos-mesh.org/v1alpha1",
    "StressChaos": "chaos-mesh.org/v1alpha1",
    "PodChaos": "chaos-mesh.org/v1alpha1",
    "JVMChaos": "chaos-mesh.org/v1alpha1",
    "Schedule": "chaos-mesh.org/v1alpha1",
    "PrometheusRule": "monitoring.coreos.com/v1",
}


def matching_names(api: KubeApi, group: Group) -> list[str]:
    """Names of the live objects of a ground-truth group (its name, or a full match of one of its
    filters), in listing order; none for a kind with no known apiVersion or when listing fails."""
    api_version = API_VERSION_OF_KIND.get(group.kind)
    if api_version is None:
        return []
    try:
        objs = api.list(api_version, group.kind, group.namespace)
    except KubeApiError:
        return []
    names = [o.get("metadata", {}).get("name", "") for o in objs]
    return [
        n for n in names if (group.name and n == group.name) or any(re.fullmatch(f, n) for f in group.filter)
    ]
