"""The cluster DNS add-on every kind cluster runs: CoreDNS in ``kube-system`` behind the
``kube-dns`` Service (10.96.0.10), as kind v0.27 (Kubernetes 1.32) deploys it. The twin creates it
at bootstrap so that ``kubectl -n kube-system get pods,svc`` looks like a real cluster and restarting
or scaling CoreDNS is an operation an agent can perform (it does not fix app faults)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.11.3"
CLUSTER_DNS_IP = "10.96.0.10"
NAMESPACE = "kube-system"
SERVICE = "kube-dns"
DEPLOYMENT = "coredns"
COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"""
LABELS = {"k8s-app": "kube-dns"}


def coredns_objects() -> list[Obj]:
    """ServiceAccount, ConfigMap, Deployment and Service of the cluster DNS."""
    meta = {"namespace": NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "name": DEPLOYMENT}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta, "name": DEPLOYMENT},
            "data": {"Corefile": COREFILE},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**meta, "name": DEPLOYMENT, "labels": dict(LABELS)},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": dict(LABELS)},
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"},
                },
                "template": {
                    "metadata": {"labels": dict(LABELS)},
                    "spec": {
                        "priorityClassName": "system-cluster-critical",
                        "serviceAccountName": "coredns",
                        "tolerations": [
                            {"key": "CriticalAddonsOnly", "operator": "Exists"},
                            {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                        ],
                        "nodeSelector": {"kubernetes.io/os": "linux"},
                        "containers": [
                            {
                                "name": "coredns",
                                "image": COREDNS_IMAGE,
                                "imagePullPolicy": "IfNotPresent",
                                "args": ["-conf", "/etc/coredns/Corefile"],
                                "resources": {
                                    "limits": {"memory": "170Mi"},
                                    "requests": {"cpu": "100m", "memory": "70Mi"},
                                },
                                "volumeMounts": [
                                    {"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}
                                ],
                                "ports": [
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                    {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                                ],
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                                    "readOnlyRootFilesystem": True,
                                },
                                "livenessProbe": {
                                    "httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
                                    "initialDelaySeconds": 60,
                                    "timeoutSeconds": 5,
                                    "successThreshold": 1,
                                    "failureThreshold": 5,
                                },
                                "readinessProbe": {
                                    "httpGet": {"path": "/ready", "port": 8181, "scheme": "HTTP"},
                                    "periodSeconds": 10,
                                    "timeoutSeconds": 1,
                                    "successThreshold": 1,
                                    "failureThreshold": 3,
                                },
                            }
                        ],
                        "dnsPolicy": "Default",
                        "volumes": [
                            {
                                "name": "config-volume",
                                "configMap": {
                                    "name": "coredns",
                                    "items": [{"key": "Corefile", "path": "Corefile"}],
                                },
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                **meta,
                "name": SERVICE,
                "labels": {
                    **LABELS,
                    "kubernetes.io/cluster-service": "true",
                    "kubernetes.io/name": "CoreDNS",
                },
                "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
            },
            "spec": {
                "selector": dict(LABELS),
                "clusterIP": CLUSTER_DNS_IP,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                    {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
                ],
            },
        },
    ]
