"""Endpoints/EndpointSlices, garbage collection, namespaces and service accounts."""

from __future__ import annotations

from ctl_helpers import DEPLOYMENTS, PODS, REPLICASETS, SERVICES, deployment, pods_of

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.kube.store import clone
from itbench_agents.twin.runtime import ContainerVerdict

ENDPOINTS = GroupResource("", "endpoints")
SLICES = GroupResource("discovery.k8s.io", "endpointslices")
NAMESPACES = GroupResource("", "namespaces")
SAS = GroupResource("", "serviceaccounts")
CONFIGMAPS = GroupResource("", "configmaps")


def _svc(name, selector, target_port="http"):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "selector": selector,
            "ports": [{"name": "web", "port": 80, "targetPort": target_port, "protocol": "TCP"}],
        },
    }


def test_endpoints_follow_ready_pods(twin, runtime):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2))
    twin.store.create(SERVICES, _svc("web", {"app": "web"}))
    twin.advance(10)
    ep = twin.store.get(ENDPOINTS, "default", "web")
    [subset] = ep["subsets"]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP", "name": "web"}]
    assert sorted(a["ip"] for a in subset["addresses"]) == sorted(
        p["status"]["podIP"] for p in pods_of(twin, "web")
    )
    assert "notReadyAddresses" not in subset
    [sl] = [
        s
        for s in twin.store.list(SLICES, "default")
        if s["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    ]
    assert sl["addressType"] == "IPv4" and len(sl["endpoints"]) == 2
    assert all(e["conditions"]["ready"] for e in sl["endpoints"])
    assert sl["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
    # readiness drops -> addresses move to notReadyAddresses
    runtime.rules["app"] = ContainerVerdict(ready=False)
    twin.store.create(SERVICES, _svc("poke", {"app": "none"}))
    twin.advance(2)
    [subset] = twin.store.get(ENDPOINTS, "default", "web")["subsets"]
    assert "addresses" not in subset and len(subset["notReadyAddresses"]) == 2


def test_wrong_target_port_name_and_bad_selector(twin):
    twin.store.create(DEPLOYMENTS, deployment("web"))
    twin.store.create(SERVICES, _svc("named-wrong", {"app": "web"}, target_port="nope"))
    twin.store.create(SERVICES, _svc("numeric", {"app": "web"}, target_port=9999))
    twin.store.create(SERVICES, _svc("nomatch", {"app": "typo"}))
    twin.advance(10)
    assert "subsets" not in twin.store.get(ENDPOINTS, "default", "named-wrong")
    assert twin.store.get(ENDPOINTS, "default", "numeric")["subsets"][0]["ports"][0]["port"] == 9999
    assert "subsets" not in twin.store.get(ENDPOINTS, "default", "nomatch")
    twin.store.delete(SERVICES, "default", "numeric")
    twin.advance(1)
    assert twin.store.get(ENDPOINTS, "default", "numeric") is None
    assert not [
        s
        for s in twin.store.list(SLICES, "default")
        if s["metadata"]["labels"]["kubernetes.io/service-name"] == "numeric"
    ]


def test_gc_cascades_deployment_deletion(twin):
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2))
    twin.advance(5)
    assert len(pods_of(twin, "web")) == 2
    twin.store.delete(DEPLOYMENTS, "default", "web")
    twin.advance(2)
    assert pods_of(twin, "web") == []
    assert not [
        r for r in twin.store.list(REPLICASETS, "default") if r["metadata"]["name"].startswith("web-")
    ]


def test_orphan_finalizer_keeps_dependents(twin):
    twin.store.create(DEPLOYMENTS, deployment("web"))
    twin.advance(5)
    d = clone(twin.store.get(DEPLOYMENTS, "default", "web"))
    d["metadata"]["finalizers"] = ["orphan"]
    d["metadata"].pop("resourceVersion")
    twin.store.update(DEPLOYMENTS, d)
    twin.store.delete(DEPLOYMENTS, "default", "web")
    twin.advance(2)
    assert twin.store.get(DEPLOYMENTS, "default", "web") is None
    [rs] = [r for r in twin.store.list(REPLICASETS, "default") if r["metadata"]["name"].startswith("web-")]
    assert "ownerReferences" not in rs["metadata"]
    assert len(pods_of(twin, "web")) == 1


def test_namespace_lifecycle(twin):
    twin.store.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    twin.advance(1)
    assert twin.store.get(NAMESPACES, "", "shop")["status"]["phase"] == "Active"
    assert twin.store.get(SAS, "shop", "default") is not None
    assert twin.store.get(CONFIGMAPS, "shop", "kube-root-ca.crt") is not None
    twin.store.create(DEPLOYMENTS, deployment("cart", namespace="shop"))
    twin.advance(5)
    assert len(pods_of(twin, "cart", "shop")) == 1
    # what the REST layer does for DELETE namespace: mark Terminating
    ns = clone(twin.store.get(NAMESPACES, "", "shop"))
    ns["status"]["phase"] = "Terminating"
    ns["metadata"].pop("resourceVersion")
    twin.store.update(NAMESPACES, ns, status_only=True)
    twin.advance(2)
    assert twin.store.get(NAMESPACES, "", "shop") is None
    assert twin.store.list(PODS, "shop") == [] and twin.store.list(DEPLOYMENTS, "shop") == []
    assert twin.store.list(SAS, "shop") == []
