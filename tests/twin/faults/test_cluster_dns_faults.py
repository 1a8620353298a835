"""The cluster DNS (CoreDNS in kube-system): every name lookup depends on it, so taking it down
breaks every call between services; restarting it (a common wrong fix) costs nothing."""

from __future__ import annotations

from faultkit import DEPLOYMENTS, PODS, SERVICES, Cluster, healed

from itbench_agents.twin.kube.store import clone


def coredns_pods(c: Cluster) -> list[dict]:
    return [p for p in c.twin.store.list(PODS, "kube-system") if p["metadata"]["name"].startswith("coredns-")]


def test_the_cluster_runs_coredns_behind_kube_dns(chain: Cluster) -> None:
    pods = coredns_pods(chain)
    assert len(pods) == 2 and all(p["status"]["phase"] == "Running" for p in pods)
    assert all(c["ready"] for p in pods for c in p["status"]["containerStatuses"])
    svc = chain.get(SERVICES, "kube-dns", ns="kube-system")
    assert svc is not None and svc["spec"]["clusterIP"] == "10.96.0.10"


def test_coredns_scaled_to_zero_breaks_every_lookup_until_scaled_back(chain: Cluster) -> None:
    chain.edit(DEPLOYMENTS, "coredns", lambda d: d["spec"].__setitem__("replicas", 0), ns="kube-system")
    chain.advance(30)
    assert coredns_pods(chain) == []
    # the in-cluster load generator cannot resolve a either: traffic stops, the probe fails
    assert chain.rate("a") == 0.0 and not chain.probe_ok()
    assert "lookup c on 10.96.0.10:53" in chain.messages("b") and "i/o timeout" in chain.messages("b")
    chain.edit(DEPLOYMENTS, "coredns", lambda d: d["spec"].__setitem__("replicas", 2), ns="kube-system")
    healed(chain, 60.0)


def test_deleting_the_kube_dns_service_breaks_lookups_and_recreating_it_heals(chain: Cluster) -> None:
    original = clone(chain.get(SERVICES, "kube-dns", ns="kube-system"))
    chain.delete(SERVICES, "kube-dns", ns="kube-system")
    chain.advance(30)
    assert chain.rate("a") == 0.0 and not chain.probe_ok()
    for key in ("resourceVersion", "uid", "creationTimestamp"):
        original["metadata"].pop(key, None)
    chain.create(SERVICES, original)
    healed(chain, 60.0)


def test_restarting_coredns_is_harmless(chain: Cluster) -> None:
    def restart(d: dict) -> None:
        ann = d["spec"]["template"]["metadata"].setdefault("annotations", {})
        ann["kubectl.kubernetes.io/restartedAt"] = "2025-06-15T12:00:00Z"

    before = {p["metadata"]["name"] for p in coredns_pods(chain)}
    chain.edit(DEPLOYMENTS, "coredns", restart, ns="kube-system")
    for _ in range(12):  # one replica at a time (maxUnavailable 1): lookups keep working throughout
        chain.advance(5)
        assert chain.degraded() == set()
    after = {p["metadata"]["name"] for p in coredns_pods(chain)}
    assert len(after) == 2 and not (after & before)
