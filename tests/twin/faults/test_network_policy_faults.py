"""NetworkPolicy faults beyond deny-ingress: egress isolation (DNS first), namespace selectors,
and the fixes an operator would write (allow DNS, allow the callee, label the namespace)."""

from __future__ import annotations

from faultkit import NETPOLS, Cluster, healed

from itbench_agents.k8s.kinds import GroupResource

NAMESPACES = GroupResource("", "namespaces")
DNS_RULE = {
    "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
    "ports": [{"port": 53, "protocol": "UDP"}],
}


def policy(name: str, spec: dict) -> dict:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_egress_deny_all_breaks_dns_and_each_allow_restores_a_step(chain: Cluster) -> None:
    b_out = {"podSelector": {"matchLabels": {"app": "b"}}, "policyTypes": ["Egress"]}
    chain.create(NETPOLS, policy("b-egress", b_out))
    chain.advance(30)
    assert chain.degraded() == {"a", "b"}  # b cannot reach c; a sees b's errors
    assert "deadline_exceeded" in chain.symptoms("b")
    assert "lookup c on 10.96.0.10:53" in chain.messages("b") and "i/o timeout" in chain.messages("b")
    # allowing DNS only: names resolve, the connection to c still hangs
    chain.edit(NETPOLS, "b-egress", lambda p: p["spec"].__setitem__("egress", [DNS_RULE]))
    chain.advance(30)
    assert chain.degraded() == {"a", "b"}
    assert "lookup c" not in chain.messages("b") and "deadline_exceeded" in chain.symptoms("b")
    # and allowing c's port: healthy again, with the policy still in place
    to_c = {"to": [{"podSelector": {"matchLabels": {"app": "c"}}}], "ports": [{"port": 8080}]}
    chain.edit(NETPOLS, "b-egress", lambda p: p["spec"].__setitem__("egress", [DNS_RULE, to_c]))
    healed(chain, 60.0)


def test_egress_allow_on_the_wrong_protocol_does_not_help(chain: Cluster) -> None:
    spec = {
        "podSelector": {"matchLabels": {"app": "b"}},
        "policyTypes": ["Egress"],
        "egress": [DNS_RULE, {"ports": [{"port": 8080, "protocol": "UDP"}]}],
    }
    chain.create(NETPOLS, policy("b-egress", spec))
    chain.advance(30)
    assert chain.degraded() == {"a", "b"}
    chain.delete(NETPOLS, "b-egress")
    healed(chain, 60.0)


def test_ingress_from_a_namespace_selector_follows_namespace_labels(chain: Cluster) -> None:
    spec = {
        "podSelector": {"matchLabels": {"app": "c"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "shop"}}}]}],
    }
    chain.create(NETPOLS, policy("c-from-team", spec))
    chain.advance(30)
    assert chain.degraded() == {"a", "b"} and "deadline_exceeded" in chain.symptoms("b")
    # labelling the app's own namespace lets b's traffic match the selector
    chain.edit(
        NAMESPACES,
        chain.ns,
        lambda n: n["metadata"].setdefault("labels", {}).__setitem__("team", "shop"),
        ns="",
    )
    healed(chain, 60.0)
    chain.delete(NETPOLS, "c-from-team")


def test_ingress_ip_block_excepting_the_callers_node_range(chain: Cluster) -> None:
    b_ip = chain.pods("b")[0]["status"]["podIP"]
    prefix = ".".join(b_ip.split(".")[:3]) + ".0/24"
    spec = {
        "podSelector": {"matchLabels": {"app": "c"}},
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.244.0.0/16", "except": [prefix]}}]}],
    }
    chain.create(NETPOLS, policy("c-ipblock", spec))
    chain.advance(30)
    assert chain.degraded() == {"a", "b"}
    chain.edit(NETPOLS, "c-ipblock", lambda p: p["spec"]["ingress"][0]["from"][0]["ipBlock"].pop("except"))
    healed(chain, 60.0)
