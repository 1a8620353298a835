"""How a call from one pod reaches another: address → DNS → Service → endpoints → NetworkPolicy →
network chaos → authentication. The result is a :class:`Conn`: which fraction of calls fail, how,
with which client-side message, and how much latency the network adds.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from ...k8s.readiness import serving
from ...k8s.selectors import matches_map
from ..controllers import coredns
from ..controllers.kinds import NAMESPACES, NETPOLS
from ..faults.chaos import ActiveChaos, parse_duration, picked, target_selects
from . import netpol
from .cluster import PODS as _PODS
from .cluster import SERVICES as _SERVICES
from .cluster import ClusterView, Instance
from .model import Dependency, Operation

Obj = dict[str, Any]
CLUSTER_DNS = coredns.CLUSTER_DNS_IP
COREDNS = netpol.Endpoint(
    coredns.NAMESPACE, dict(coredns.LABELS), "10.244.0.2", {"dns": 53, "dns-tcp": 53, "metrics": 9153}
)
"""Where the cluster's DNS queries land (CoreDNS behind the kube-dns Service), for egress policies."""

# client-side error texts per stack: (refused, dns, timeout)
_MESSAGES = {
    "go-grpc": (
        'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: '
        'dial tcp {ip}:{port}: connect: connection refused"',
        "rpc error: code = Unavailable desc = name resolver error: produced zero addresses "
        "(dial tcp: lookup {host} on {dns}:53: no such host)",
        "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    ),
    "node-grpc": (
        "14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED {ip}:{port}",
        "14 UNAVAILABLE: Name resolution failed for target dns:{host}:{port}",
        "4 DEADLINE_EXCEEDED: Deadline exceeded",
    ),
    "python-grpc": (
        "StatusCode.UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: "
        "ipv4:{ip}:{port}: Failed to connect to remote host: Connection refused",
        "StatusCode.UNAVAILABLE: DNS resolution failed for {host}:{port}",
        "StatusCode.DEADLINE_EXCEEDED: Deadline Exceeded",
    ),
    "go-http": (
        'Post "http://{host}:{port}": dial tcp {ip}:{port}: connect: connection refused',
        'Post "http://{host}:{port}": dial tcp: lookup {host} on {dns}:53: no such host',
        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
    ),
    "http": (
        "upstream connect error or disconnect/reset before headers. reset reason: connection failure, "
        "transport failure reason: delayed connect error: 111",
        "getaddrinfo ENOTFOUND {host}",
        "upstream request timeout",
    ),
    "redis": (
        "It was not possible to connect to the redis server(s). UnableToConnect on {host}:{port}",
        "It was not possible to connect to the redis server(s). Name or service not known: {host}",
        "Timeout performing GET (5000ms), inst: 0, qu: 0, qs: 1, aw: False, rs: ReadAsync, ws: Idle",
    ),
    "kafka": (
        "kafka: client has run out of available brokers to talk to: dial tcp {ip}:{port}: connect: connection refused",
        "kafka: client has run out of available brokers to talk to: dial tcp: lookup {host}: no such host",
        "Failed to send message to Kafka within context deadline",
    ),
    "sql": (
        "dial tcp {ip}:{port}: connect: connection refused",
        "dial tcp: lookup {host} on {dns}:53: no such host",
        "pq: canceling statement due to user request (context deadline exceeded)",
    ),
    "mongo": (
        "no reachable servers: dial tcp {ip}:{port}: connect: connection refused",
        "no reachable servers: lookup {host} on {dns}:53: no such host",
        "no reachable servers (i/o timeout)",
    ),
}


@dataclass
class Conn:
    """Outcome of connecting caller → callee (before the callee does any work)."""

    refused: float = 0.0  # fast failures (refused, DNS, auth, aborted)
    timeout: float = 0.0  # calls that hang until the caller's deadline
    latency_ms: float = 0.0  # network latency added to successful calls
    server_errors: float = 0.0  # the callee is reached but answers with an error (tampered request)
    symptoms: list[tuple[str, str, float]] = field(default_factory=list)  # (kind, message, ratio)
    endpoints: list[Instance] = field(default_factory=list)  # callee pods the calls land on

    @property
    def reach(self) -> float:
        """Fraction of calls that arrive at the callee process."""
        return max(0.0, 1.0 - self.refused - self.timeout)


def parse_address(raw: str, default_port: int) -> tuple[str, int | None]:
    s = raw.strip()
    s = re.sub(r"^[a-z]+://", "", s)
    s = s.split("/", 1)[0]
    if "@" in s:
        s = s.rsplit("@", 1)[1]  # a DSN's user:password@
    if ":" in s:
        host, port = s.rsplit(":", 1)
        return host, int(port) if port.isdigit() else None
    return s, default_port


def address_of(dep: Dependency, env: dict[str, str]) -> tuple[str, int | None]:
    dhost, dport = parse_address(dep.default, 80)
    if dep.addr_env and env.get(dep.addr_env):
        return parse_address(env[dep.addr_env], dport or 80)
    host = env.get(dep.host_env or "", "") or dhost
    p = env.get(dep.port_env or "", "")
    port: int | None = (int(p) if p.isdigit() else None) if p else dport
    return host, port


def dns_broken(pod: Obj) -> str | None:
    """Why cluster names do not resolve from this pod (dnsPolicy), or None."""
    spec = pod.get("spec", {})
    policy = spec.get("dnsPolicy", "ClusterFirst")
    if policy == "Default":
        return "node resolver"
    if policy == "None":
        servers = (spec.get("dnsConfig") or {}).get("nameservers") or []
        if CLUSTER_DNS not in servers:
            return ",".join(servers) or "no nameserver"
    if spec.get("hostNetwork") and policy == "ClusterFirst":
        return "node resolver"
    return None


def _fmt(stack: str, kind: int, **kw: Any) -> str:
    tpl = _MESSAGES.get(stack, _MESSAGES["http"])[kind]
    return tpl.format(dns=CLUSTER_DNS, **kw)


def connect(
    view: ClusterView,
    caller: Instance | None,
    callee: str,
    dep: Dependency,
    env: dict[str, str],
) -> Conn:
    """Resolve and connect; ``caller`` None means a client outside the cluster's pods (the probe)."""
    host, port = address_of(dep, env)
    stack = dep.stack
    if caller is not None and (why := dns_broken(caller.pod)):
        return Conn(
            refused=1.0,
            symptoms=[
                ("dns_no_such_host", _fmt(stack, 1, host=host, port=port or 0) + f" (resolver: {why})", 1.0)
            ],
        )
    if (
        caller is not None
        and not _is_ip(host)
        and (view.cluster_dns_down or (view.netpols and not _dns_allowed(view, caller)))
    ):
        return Conn(
            timeout=1.0,
            symptoms=[
                (
                    "deadline_exceeded",
                    f"{_fmt(stack, 2)} (dial tcp: lookup {host} on {CLUSTER_DNS}:53: read udp "
                    f"{caller.ip}:53124->{CLUSTER_DNS}:53: i/o timeout)",
                    1.0,
                )
            ],
        )
    if port is None or port <= 0:
        return Conn(
            refused=1.0,
            symptoms=[("connection_refused", _fmt(stack, 0, ip="10.96.0.1", host=host, port=port or 0), 1.0)],
        )
    svc_spec = view.services[callee]
    if dep.discovery == "registry":
        if dep.registry and dep.registry in view.services and not view.serving(dep.registry):
            return Conn(
                refused=1.0,
                symptoms=[
                    (
                        "unavailable",
                        f"rpc error: code = Unavailable desc = {dep.registry} registry unreachable",
                        1.0,
                    )
                ],
            )
        endpoints = view.serving(callee)
        if not endpoints:
            return Conn(
                refused=1.0,
                symptoms=[
                    (
                        "unavailable",
                        f"rpc error: code = Unavailable desc = there is no address available: {callee}",
                        1.0,
                    )
                ],
            )
        conn = Conn(endpoints=endpoints)
        ports = {id(i): port for i in endpoints}
        total = len(endpoints)
    else:
        name, ns = _service_name(host, view.ns)
        ksvc = view.k8s_services.get(name) if ns == view.ns else _lookup_service(view, ns, name)
        if ksvc is None:
            return Conn(
                refused=1.0, symptoms=[("dns_no_such_host", _fmt(stack, 1, host=host, port=port), 1.0)]
            )
        sport = next((p for p in ksvc.get("spec", {}).get("ports") or [] if p.get("port") == port), None)
        cluster_ip = ksvc.get("spec", {}).get("clusterIP") or "10.96.0.1"
        if sport is None:
            return Conn(
                refused=1.0,
                symptoms=[("connection_refused", _fmt(stack, 0, ip=cluster_ip, host=host, port=port), 1.0)],
            )
        selector = ksvc.get("spec", {}).get("selector") or {}
        pods = (
            view.select(selector)
            if ns == view.ns
            else [p for p in view.store.list(_PODS, ns) if matches_map(selector, p["metadata"].get("labels"))]
        )
        backends = [p for p in pods if serving(p)]
        target = sport.get("targetPort", sport.get("port"))
        good: list[Instance] = []
        ports = {}
        bad_ips: list[str] = []
        serving_by_uid = {i.pod["metadata"]["uid"]: i for i in view.serving(callee)}
        total = 0
        for pod in backends:
            tport = _target_port(pod, target)
            if tport is None:
                continue  # a named port the pod does not declare: not an endpoint
            total += 1
            inst = serving_by_uid.get(pod["metadata"].get("uid"))
            if inst is not None and tport in inst.listens_on(svc_spec):
                good.append(inst)
                ports[id(inst)] = tport
            else:
                bad_ips.append(f"{pod.get('status', {}).get('podIP', '10.244.0.1')}:{tport}")
        if total == 0:
            return Conn(
                refused=1.0,
                symptoms=[("connection_refused", _fmt(stack, 0, ip=cluster_ip, host=host, port=port), 1.0)],
            )
        conn = Conn(endpoints=good)
        if bad_ips:
            ratio = len(bad_ips) / total
            ip, bport = bad_ips[0].rsplit(":", 1)
            conn.refused += ratio
            conn.symptoms.append(("connection_refused", _fmt(stack, 0, ip=ip, host=host, port=bport), ratio))
    if conn.endpoints and caller is not None:
        blocked = [i for i in conn.endpoints if not _policy_allows(view, caller, i, ports[id(i)])]
        if blocked:
            ratio = len(blocked) / total
            conn.timeout += ratio
            conn.symptoms.append(("deadline_exceeded", _fmt(stack, 2), ratio))
    _network_chaos(view, caller, conn, stack)
    if dep.auth is not None and conn.reach > 0:
        _auth(dep, env, conn)
    return conn


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _service_name(host: str, ns: str) -> tuple[str, str]:
    parts = host.split(".")
    if len(parts) >= 2 and (len(parts) == 2 or parts[2] == "svc"):
        return parts[0], parts[1]
    return parts[0], ns


def _lookup_service(view: ClusterView, ns: str, name: str) -> Obj | None:
    return view.store.get(_SERVICES, ns, name)


def _target_port(pod: Obj, target: Any) -> int | None:
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for c in pod.get("spec", {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target:
                return int(p.get("containerPort", 0))
    return None


def _policy_allows(view: ClusterView, caller: Instance, callee: Instance, port: int) -> bool:
    """NetworkPolicy (egress at the caller, ingress at the callee) for one TCP connection."""
    return netpol.allowed(
        lambda ns: _policies(view, ns),
        lambda ns: _namespace_labels(view, ns),
        _endpoint(view, caller),
        _endpoint(view, callee),
        port,
    )


def _dns_allowed(view: ClusterView, caller: Instance) -> bool:
    """Whether the caller's egress policies let its DNS queries (UDP 53) reach CoreDNS."""
    src = _endpoint(view, caller)
    return netpol.allowed(
        lambda ns: _policies(view, ns) if ns == src.namespace else (),  # CoreDNS has no policies here
        lambda ns: _namespace_labels(view, ns),
        src,
        COREDNS,
        53,
        "UDP",
    )


def _endpoint(view: ClusterView, inst: Instance) -> netpol.Endpoint:
    ports = {
        str(p["name"]): int(p.get("containerPort", 0))
        for p in inst.container.get("ports") or []
        if p.get("name")
    }
    ns = str(inst.pod["metadata"].get("namespace") or view.ns)
    return netpol.Endpoint(ns, inst.labels, inst.ip, ports)


def _policies(view: ClusterView, ns: str) -> list[Obj]:
    return view.netpols if ns == view.ns else view.store.list(NETPOLS, ns)


def _namespace_labels(view: ClusterView, ns: str) -> dict[str, str]:
    obj = view.store.get(NAMESPACES, "", ns)
    labels = dict((obj or {}).get("metadata", {}).get("labels") or {})
    labels.setdefault("kubernetes.io/metadata.name", ns)  # the apiserver always sets it
    return labels


def _network_chaos(view: ClusterView, caller: Instance | None, conn: Conn, stack: str) -> None:
    if not conn.endpoints:
        return
    share = conn.reach / max(1, len(conn.endpoints))
    for ch in view.chaos:
        if ch.kind != "NetworkChaos":
            continue
        hit = sum(1 for ep in conn.endpoints if _edge_hit(view, ch, caller, ep))
        if not hit:
            continue
        ratio = hit * share
        _apply_netem(ch, conn, ratio, stack)


def _edge_hit(view: ClusterView, ch: ActiveChaos, caller: Instance | None, callee: Instance) -> bool:
    has_target = isinstance(ch.spec.get("target"), dict)
    caller_picked = caller is not None and picked(view, ch, caller.pod)
    callee_picked = picked(view, ch, callee.pod)
    if not has_target:
        return caller_picked or callee_picked
    caller_tgt = caller is not None and target_selects(ch, caller.pod)
    callee_tgt = target_selects(ch, callee.pod)
    to = caller_picked and callee_tgt
    frm = callee_picked and caller_tgt
    # ``direction`` says which packets are hit (to: from the selected pods to the target); a
    # connection needs both ways, so a call either side starts meets the fault: a partition
    # "to" drops the callee's replies when the selected pods are the ones called (ITBench 91:
    # email -> checkout partition, checkout's calls to email time out), a delay slows them
    return to or frm


def _apply_netem(ch: ActiveChaos, conn: Conn, ratio: float, stack: str) -> None:
    action = ch.action
    spec = ch.spec
    if action in ("delay", "netem") and spec.get("delay"):
        d = spec["delay"]
        lat = (parse_duration(d.get("latency")) or 0.0) * 1000
        jit = (parse_duration(d.get("jitter")) or 0.0) * 1000 if d.get("jitter") else 0.0
        conn.latency_ms += (lat + jit / 2) * ratio
        conn.symptoms.append(("network_delay", f"network latency +{lat:.0f}ms ({ch.ref})", ratio))
    if action in ("loss", "netem") and spec.get("loss"):
        p = float(str(spec["loss"].get("loss", "0")).rstrip("%")) / 100.0
        fail = p**2 * ratio
        moved = min(fail, conn.reach)
        conn.timeout += moved
        conn.latency_ms += min(3000.0, 200.0 * p / max(1e-3, 1 - p)) * ratio
        conn.symptoms.append(("deadline_exceeded", _fmt(stack, 2), moved))
    if action == "partition":
        moved = min(ratio, conn.reach)
        conn.timeout += moved
        conn.symptoms.append(("deadline_exceeded", _fmt(stack, 2), moved))


def http_chaos_for(view: ClusterView, callee_inst: Instance, op: Operation, port: int) -> list[ActiveChaos]:
    out = []
    for ch in view.chaos_on(callee_inst.pod, "HTTPChaos"):
        spec = ch.spec
        if spec.get("port") not in (None, port):
            continue
        if spec.get("method") and op.http_method and spec["method"].upper() != op.http_method.upper():
            continue
        if spec.get("method") and not op.http_method:
            continue
        if spec.get("path") and not fnmatch.fnmatch(op.http_path or "", spec["path"]):
            continue
        out.append(ch)
    return out


def _auth(dep: Dependency, env: dict[str, str], conn: Conn) -> None:
    auth = dep.auth
    assert auth is not None
    expected: str | None = auth.server_password
    if conn.endpoints:
        srv = conn.endpoints[0]
        if auth.server_env is not None:
            expected = srv.env.get(auth.server_env) or expected
        if auth.server_arg is not None:
            args = [*(srv.container.get("command") or []), *(srv.container.get("args") or [])]
            words = " ".join(
                re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: srv.env.get(m.group(1), ""), str(a))
                for a in args
            ).split()
            expected = words[words.index(auth.server_arg) + 1] if auth.server_arg in words[:-1] else None
    if not expected:
        return
    raw = env.get(auth.client_env or "", "")
    given = raw
    if auth.client_pattern:
        m = re.search(auth.client_pattern, raw)
        given = next((g for g in (m.groups() if m else ()) if g), "") if m else ""
    if given != expected:
        ratio = conn.reach
        conn.refused += ratio
        conn.symptoms.append(("auth_failed", auth.message, ratio))
