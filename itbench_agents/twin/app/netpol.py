"""NetworkPolicy semantics (networking.k8s.io/v1) for one connection between two endpoints.

A connection is allowed when the source may send it (egress) and the destination may receive it
(ingress). A pod is isolated in a direction when a policy of its namespace selects it
(``podSelector``) with that direction in ``policyTypes`` (default: Ingress, plus Egress when the
policy has an ``egress`` section); an isolated pod accepts only what some selecting policy's rule
allows. A rule matches when one of its ``ports`` matches (protocol, number or named port, ``endPort``
range; none listed: every port) and one of its peers does (``podSelector`` within the policy's
namespace, ``namespaceSelector`` [with ``podSelector``] in other namespaces, ``ipBlock`` CIDR minus
``except``; none listed: everyone).

One deliberate difference: a rule whose ``ports`` list is present but empty allows nothing
(ITBench's "ingress-port-blocking" policy means deny-all; by the letter of the API it would allow
everything).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...k8s.selectors import matches

Obj = dict[str, Any]


@dataclass(frozen=True)
class Endpoint:
    """One side of a connection."""

    namespace: str
    labels: dict[str, str] = field(default_factory=dict)
    ip: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    """Named container ports (the destination's, for rules that name a port)."""


def policy_types(spec: Obj) -> list[str]:
    types = spec.get("policyTypes")
    if types:
        return [str(t) for t in types]
    return ["Ingress", "Egress"] if "egress" in spec else ["Ingress"]


def allowed(
    policies: Callable[[str], Iterable[Obj]],
    namespace_labels: Callable[[str], dict[str, str]],
    src: Endpoint,
    dst: Endpoint,
    port: int,
    protocol: str = "TCP",
) -> bool:
    """Whether ``src`` may open a ``protocol`` connection to ``dst`` on ``port``.

    ``policies(ns)`` gives the NetworkPolicies of a namespace; ``namespace_labels(ns)`` the labels of
    a Namespace (for ``namespaceSelector``)."""
    return _direction_allows(policies, namespace_labels, "Egress", src, dst, port, protocol) and (
        _direction_allows(policies, namespace_labels, "Ingress", dst, src, port, protocol)
    )


def _direction_allows(
    policies: Callable[[str], Iterable[Obj]],
    namespace_labels: Callable[[str], dict[str, str]],
    direction: str,
    me: Endpoint,
    peer: Endpoint,
    port: int,
    protocol: str,
) -> bool:
    """Whether ``me`` (the pod the policies select) lets traffic to/from ``peer`` through."""
    isolated = False
    rules_key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    target = me if direction == "Ingress" else peer  # whose ports the rule's ports refer to
    for np in policies(me.namespace):
        spec = np.get("spec") or {}
        if direction not in policy_types(spec) or not matches(
            spec.get("podSelector") or {},
            me.labels,  # a struct in Go: absent is empty, all pods
        ):
            continue
        isolated = True
        policy_ns = str((np.get("metadata") or {}).get("namespace") or me.namespace)
        for rule in spec.get(rules_key) or []:
            if _ports_match(rule, target, port, protocol) and _peers_match(
                rule.get(peers_key), peer, policy_ns, namespace_labels
            ):
                return True
    return not isolated


def _ports_match(rule: Obj, target: Endpoint, port: int, protocol: str) -> bool:
    if "ports" not in rule or rule["ports"] is None:
        return True
    if not rule["ports"]:
        return False  # present but empty: ITBench's deny-all (see the module docstring)
    for p in rule["ports"]:
        if str(p.get("protocol") or "TCP").upper() != protocol.upper():
            continue
        want = p.get("port")
        if want is None:
            return True
        if isinstance(want, str) and not want.isdigit():
            if target.ports.get(want) == port:
                return True
            continue
        lo = int(want)
        hi = int(p.get("endPort") or lo)
        if lo <= port <= hi:
            return True
    return False


def _peers_match(
    peers: list[Obj] | None, peer: Endpoint, policy_ns: str, namespace_labels: Callable[[str], dict[str, str]]
) -> bool:
    if not peers:
        return True
    for p in peers:
        if "ipBlock" in p:
            if _in_block(peer.ip, p["ipBlock"] or {}):
                return True
            continue
        if "namespaceSelector" in p:
            if not matches(p["namespaceSelector"] or {}, namespace_labels(peer.namespace)):
                continue
        elif peer.namespace != policy_ns:
            continue  # a podSelector alone means pods of the policy's own namespace
        if "podSelector" in p and not matches(p["podSelector"] or {}, peer.labels):
            continue
        if "podSelector" in p or "namespaceSelector" in p:
            return True
    return False


def _in_block(ip: str, block: Obj) -> bool:
    try:
        addr = ipaddress.ip_address(ip)
        if addr not in ipaddress.ip_network(str(block.get("cidr", "")), strict=False):
            return False
        return not any(addr in ipaddress.ip_network(str(x), strict=False) for x in block.get("except") or [])
    except ValueError:
        return False
