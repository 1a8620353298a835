"""apiVersion of the kinds ground-truth groups name (for lookups through the Kubernetes API)."""

from __future__ import annotations

API_VERSION_OF_KIND: dict[str, str] = {
    "Pod": "v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Namespace": "v1",
    "Node": "v1",
    "PersistentVolumeClaim": "v1",
    "ResourceQuota": "v1",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "HorizontalPodAutoscaler": "autoscaling/v2",
    "NetworkPolicy": "networking.k8s.io/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "NetworkChaos": "chaos-mesh.org/v1alpha1",
    "HTTPChaos": "chaos-mesh.org/v1alpha1",
    "StressChaos": "chaos-mesh.org/v1alpha1",
    "PodChaos": "chaos-mesh.org/v1alpha1",
    "JVMChaos": "chaos-mesh.org/v1alpha1",
}
