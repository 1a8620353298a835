"""The objects a fresh cluster has before anyone applies anything: nodes, system namespaces,
default service accounts, ``kube-root-ca.crt`` config maps, the ``kubernetes`` service and kind's
default ``standard`` StorageClass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .kinds import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, NODES, SERVICEACCOUNTS, SERVICES, STORAGECLASSES

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

Obj = dict[str, Any]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
KUBELET_VERSION = "v1.32.2"
ROOT_CA = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBh0d2luLWNh\n"
    "-----END CERTIFICATE-----\n"
)


def node_name(i: int) -> str:
    return f"twin-worker-{i}"


def node_ip(i: int) -> str:
    return f"172.18.0.{i + 1}"


def make_node(i: int, now_ts: str) -> Obj:
    name = node_name(i)
    cap = {"cpu": "8", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    conditions = []
    for ctype, status, reason, msg in (
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ):
        conditions.append(
            {
                "type": ctype,
                "status": status,
                "reason": reason,
                "message": msg,
                "lastHeartbeatTime": now_ts,
                "lastTransitionTime": now_ts,
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/worker": "",
                "topology.kubernetes.io/zone": "twin-zone-a",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.244.{i}.0/24", "podCIDRs": [f"10.244.{i}.0/24"]},
        "status": {
            "capacity": dict(cap),
            "allocatable": dict(cap),
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": node_ip(i)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{i:032x}",
                "systemUUID": f"00000000-0000-0000-0000-{i:012x}",
                "bootID": f"{i:08x}-0000-0000-0000-000000000000",
                "kernelVersion": "6.8.0-twin",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "phase": "Running",
        },
    }


def namespace_obj(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def default_service_account(namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": namespace},
    }


def root_ca_configmap(namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kube-root-ca.crt",
            "namespace": namespace,
            "annotations": {
                "kubernetes.io/description": "Contains a CA bundle that can be used to verify the "
                "kube-apiserver when using internal endpoints such as the internal service IP or "
                "kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
            },
        },
        "data": {"ca.crt": ROOT_CA},
    }


def kubernetes_service() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "10.96.0.1",
            "clusterIPs": ["10.96.0.1"],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
            "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
        },
        "status": {"loadBalancer": {}},
    }


def standard_storage_class() -> Obj:
    """kind's default class: local-path provisioning once a pod using the claim is scheduled."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "rancher.io/local-path",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def bootstrap_cluster(twin: Twin, nodes: int = 3) -> None:
    """Create nodes, system namespaces and their default objects (idempotent)."""
    from ...k8s.times import rfc3339

    store = twin.store
    with twin.lock:
        now_ts = rfc3339(twin.now())
        for i in range(1, nodes + 1):
            if store.get(NODES, "", node_name(i)) is None:
                store.create(NODES, make_node(i, now_ts))
        for ns in SYSTEM_NAMESPACES:
            if store.get(NAMESPACES, "", ns) is None:
                store.create(NAMESPACES, namespace_obj(ns))
            # the service-account controller normally creates these; make sure they exist even if
            # the controllers are not installed
            if store.get(SERVICEACCOUNTS, ns, "default") is None:
                store.create(SERVICEACCOUNTS, default_service_account(ns))
            if store.get(CONFIGMAPS, ns, "kube-root-ca.crt") is None:
                store.create(CONFIGMAPS, root_ca_configmap(ns))
        if store.get(SERVICES, "default", "kubernetes") is None:
            store.create(SERVICES, kubernetes_service())
        if store.get(STORAGECLASSES, "", "standard") is None:
            store.create(STORAGECLASSES, standard_storage_class())
        from .coredns import coredns_objects

        if store.get(DEPLOYMENTS, "kube-system", "coredns") is None:
            twin.apply(coredns_objects())
