"""NetworkPolicy semantics, rule by rule (the fault tests check the effects on the apps)."""

from __future__ import annotations

from typing import Any

from itbench_agents.twin.app.netpol import Endpoint, allowed, policy_types

Obj = dict[str, Any]

WEB = Endpoint("shop", {"app": "web"}, "10.244.1.5")
DB = Endpoint("shop", {"app": "db"}, "10.244.2.7", {"pg": 5432})
OTHER_NS = Endpoint("tools", {"app": "web"}, "10.244.3.9")
NS_LABELS = {"shop": {"team": "a"}, "tools": {"team": "b"}}


def np(ns: str, spec: Obj) -> Obj:
    return {"metadata": {"name": "p", "namespace": ns}, "spec": spec}


def check(policies: list[Obj], src: Endpoint, dst: Endpoint, port: int = 5432, proto: str = "TCP") -> bool:
    def by_ns(ns: str) -> list[Obj]:
        return [p for p in policies if p["metadata"]["namespace"] == ns]

    def labels(ns: str) -> dict[str, str]:
        return {**NS_LABELS.get(ns, {}), "kubernetes.io/metadata.name": ns}

    return allowed(by_ns, labels, src, dst, port, proto)


DB_ONLY = {"podSelector": {"matchLabels": {"app": "db"}}}


def test_no_policy_allows_and_a_selecting_policy_isolates() -> None:
    assert check([], WEB, DB)
    assert not check([np("shop", {**DB_ONLY, "policyTypes": ["Ingress"]})], WEB, DB)
    # a policy selecting other pods isolates nothing here
    assert check([np("shop", {"podSelector": {"matchLabels": {"app": "x"}}})], WEB, DB)


def test_default_policy_types() -> None:
    assert policy_types({}) == ["Ingress"]
    assert policy_types({"egress": []}) == ["Ingress", "Egress"]
    assert policy_types({"policyTypes": ["Egress"]}) == ["Egress"]


def test_pod_and_namespace_selectors() -> None:
    from_web = {**DB_ONLY, "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]}
    assert check([np("shop", from_web)], WEB, DB)
    assert not check([np("shop", from_web)], OTHER_NS, DB)  # podSelector alone: the policy's namespace
    team_b = {**DB_ONLY, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "b"}}}]}]}
    assert check([np("shop", team_b)], OTHER_NS, DB) and not check([np("shop", team_b)], WEB, DB)
    by_name = {
        **DB_ONLY,
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "tools"}},
                        "podSelector": {"matchLabels": {"app": "cli"}},
                    }
                ]
            }
        ],
    }
    assert not check([np("shop", by_name)], OTHER_NS, DB)  # right namespace, wrong pod


def test_ip_blocks_with_exceptions() -> None:
    pods = {
        **DB_ONLY,
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.3.0/24"]}}]}],
    }
    assert check([np("shop", pods)], WEB, DB)
    assert not check([np("shop", pods)], OTHER_NS, DB)


def test_ports_protocols_ranges_and_names() -> None:
    def only(ports: list[Obj]) -> list[Obj]:
        return [np("shop", {**DB_ONLY, "ingress": [{"ports": ports}]})]

    assert check(only([{"port": 5432}]), WEB, DB)
    assert not check(only([{"port": 5433}]), WEB, DB)
    assert not check(only([{"port": 5432, "protocol": "UDP"}]), WEB, DB)
    assert check(only([{"port": 5000, "endPort": 6000}]), WEB, DB)
    assert check(only([{"port": "pg"}]), WEB, DB)  # named port of the destination
    assert not check(only([{"port": "http"}]), WEB, DB)
    assert not check(only([]), WEB, DB)  # present but empty: ITBench's deny-all


def test_egress_isolates_the_source_and_both_sides_must_allow() -> None:
    deny_out = np("shop", {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Egress"]})
    assert not check([deny_out], WEB, DB)
    to_db = np(
        "shop",
        {
            "podSelector": {"matchLabels": {"app": "web"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "db"}}}], "ports": [{"port": "pg"}]}],
        },
    )
    assert check([to_db], WEB, DB)
    deny_in = np("shop", {**DB_ONLY, "policyTypes": ["Ingress"]})
    assert not check([to_db, deny_in], WEB, DB)
