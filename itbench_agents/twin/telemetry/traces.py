"""Sampled traces following the call graph, regenerated on demand from (seed, minute, root, k).

Roots are the load generator's entry calls (and Kafka consumer operations, whose traces are not
linked to the producer's, as in the otel demo). Each minute, each root gets a deterministic number
of sampled traces (about 2 % of its requests, at most :data:`MAX_PER_MINUTE`). A trace walks the
call graph (the app model's ``calls`` when the twin has one, else the health edges): a server
span per operation, a client span per call, calls in order, a parent lasting at least as long as
its children. Errors follow health: a call fails before reaching the callee (connection refused,
no endpoints, DNS...) with the edge's own error share, the callee fails with its operation's error
ratio, a failed non-optional call fails its caller and stops its remaining calls. Failing spans
carry ``error=true``, ``otel.status_code=ERROR``, gRPC / HTTP status codes and, where the error
starts, an ``exception`` event with the symptom's message.

Services the app model marks ``instrumented: false`` (brokers, databases, flagd, an external load
client) emit no spans: only their callers' client spans show them (``server.address``,
``db.system`` / ``messaging.system``); they are not in the services list and have no dependency
links.

Trace ids encode (minute, root, k) so ``get_trace`` regenerates a trace from its id alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ...k8s.kinds import GroupResource
from ..health import AppHealth, EdgeHealth, OperationHealth, Symptom
from .context import TelemetryContext
from .logformats import DEFAULT_MESSAGES
from .noise import hex_id, key64, unit
from .sources import Span, Trace, TraceQuery

PODS = GroupResource("", "pods")
SAMPLE = 0.02
MAX_PER_MINUTE = 5
MAX_CALLS = 6
MAX_DEPTH = 12
MAX_SCAN_TRACES = 20_000
_Z95 = 1.6448536269514722
_MASK64 = (1 << 64) - 1
_MINUTE_BIAS = 1 << 30
"""Added to a trace id's minute (counted from the twin's birth) so that minutes before it stay positive."""
FAST_FAIL = {
    "connection_refused",
    "dns_no_such_host",
    "no_endpoints",
    "auth_failed",
    "http_abort",
    "network_partition",
}


@dataclass(frozen=True)
class Root:
    caller: str | None  # the client service that starts the trace (load generator), if any
    service: str
    operation: str
    rate: float


@dataclass(frozen=True)
class CallSpec:
    to: str
    op: str
    n: float
    optional: bool = False
    kind: str = "client"


@dataclass
class _Gen:
    """State while generating one trace."""

    trace_id: str
    snap: AppHealth
    key: int
    spans: list[Span] = field(default_factory=list)
    counter: int = 0

    def next_id(self) -> str:
        self.counter += 1
        return hex_id(8, self.key, self.counter)

    def u(self, *parts: object) -> float:
        return unit(self.key, self.counter, *parts)


class SampledTraceSource:
    def __init__(self, ctx: TelemetryContext) -> None:
        self.ctx = ctx
        self._mask = key64(ctx.seed, "trace-mask") & _MASK64
        self._epoch_minute = math.floor(ctx.epoch / 60.0)
        self._pods_token = -1
        self._pods: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
        self._generate = lru_cache(maxsize=1024)(self._generate_uncached)
        self._gen_token: object = None
        self._reach: dict[tuple[float, str | None, str, str], set[str]] = {}
        """Services a root's traces reach, per health snapshot (dropped with the generation cache)."""

    # ------------------------------------------------------------------ TraceSource
    def services(self) -> list[str]:
        if self.ctx.masked("traces"):
            return []
        out: set[str] = set()
        for s in self.ctx.snapshots():
            for sh in s.services.values():
                if any(op.rate > 0 for op in sh.operations):
                    out.add(sh.service)
            out.update(e.caller for e in s.edges if e.rate > 0)
        return sorted(svc for svc in out if self.ctx.instrumented(svc))

    def operations(self, service: str, span_kind: str | None = None) -> list[tuple[str, str]]:
        if self.ctx.masked("traces") or not self.ctx.instrumented(service):
            return []
        ops: set[tuple[str, str]] = set()
        for s in self.ctx.snapshots():
            sh = s.services.get(service)
            for op in sh.operations if sh else ():
                if op.rate > 0:
                    ops.add((op.operation, _kind(op.span_kind)))
            for e in s.edges:
                if e.caller == service and e.rate > 0:
                    ops.add((e.operation, "producer" if _is_producer(e.operation) else "client"))
        return sorted(o for o in ops if span_kind is None or o[1] == span_kind)

    def find_traces(self, query: TraceQuery) -> list[Trace]:
        if self.ctx.masked("traces") or not self.ctx.instrumented(query.service):
            return []
        now_us = int(self.ctx.now() * 1e6)
        end_us = min(query.end_us or now_us, now_us)
        start_us = query.start_us or end_us - 3600 * 1_000_000
        out: list[Trace] = []
        scanned = 0
        want_errors = str(query.tags.get("error", "")).lower() == "true"
        for trace in self._iter_traces(start_us, end_us, query.service, want_errors):
            scanned += 1
            if scanned > MAX_SCAN_TRACES:
                break
            root_start = trace.start_us
            if not start_us <= root_start <= end_us:
                continue
            if _matches(trace, query):
                out.append(trace)
                if query.limit and len(out) >= query.limit:
                    break
        return out

    def get_trace(self, trace_id: str) -> Trace | None:
        if self.ctx.masked("traces"):
            return None
        tid = trace_id.lower().rjust(32, "0")
        if len(tid) != 32:
            return None
        try:
            payload = int(tid[16:], 16) ^ self._mask
        except ValueError:
            return None
        minute, r, k = (
            (payload >> 24) - _MINUTE_BIAS + self._epoch_minute,
            (payload >> 8) & 0xFFFF,
            payload & 0xFF,
        )
        if self._trace_id(minute, r, k) != tid or minute * 60 > self.ctx.now():
            return None
        roots = self._roots(minute)
        if r >= len(roots) or k >= self._per_minute(roots[r], minute, r):
            return None
        trace = self._gen(minute, r, k)
        if trace is None or trace.start_us > self.ctx.now() * 1e6:
            return None
        return trace

    def dependencies(self, end_ms: int, lookback_ms: int) -> list[tuple[str, str, int]]:
        if self.ctx.masked("traces"):
            return []
        t1 = min(end_ms / 1000.0, self.ctx.now())
        t0 = t1 - lookback_ms / 1000.0
        counts: dict[tuple[str, str], float] = {}
        snaps = self.ctx.snapshots()
        for i, s in enumerate(snaps):
            a = max(s.since, t0)
            b = min(snaps[i + 1].since if i + 1 < len(snaps) else math.inf, t1)
            if b <= a or not self.ctx.pipeline_up_at(a):
                continue  # (the pipeline's state only changes at snapshot boundaries)
            for e in s.edges:
                # Jaeger links a parent span to a child span of another service: both must emit spans
                if self.ctx.instrumented(e.caller) and self.ctx.instrumented(e.callee):
                    counts[(e.caller, e.callee)] = counts.get((e.caller, e.callee), 0.0) + e.rate * (b - a)
        return sorted((p, c, int(n)) for (p, c), n in counts.items() if int(n) > 0)

    # ------------------------------------------------------------------ roots and ids
    def _trace_id(self, minute: int, r: int, k: int) -> str:
        """The id of trace ``k`` of root ``r`` in ``minute``: the minute is counted from the twin's
        birth (``noise.ms_since``), so ids and everything drawn from them repeat at any start."""
        payload = ((minute - self._epoch_minute + _MINUTE_BIAS) << 24) | (r << 8) | k
        return f"{key64(self.ctx.seed, 'trace', payload):016x}{payload ^ self._mask:016x}"

    def _roots(self, minute: int) -> list[Root]:
        snap = self.ctx.health_at(minute * 60.0)
        if snap is None:
            return []
        return _roots_of(snap, self.ctx)

    def _per_minute(self, root: Root, minute: int, r: int) -> int:
        expected = root.rate * 60.0 * SAMPLE
        return min(MAX_PER_MINUTE, int(expected + unit(self.ctx.seed, "n", minute - self._epoch_minute, r)))

    def _iter_traces(
        self, start_us: int, end_us: int, service: str, errors_only: bool = False
    ) -> Iterator[Trace]:
        m1 = end_us // 60_000_000
        m0 = start_us // 60_000_000
        for minute in range(m1, m0 - 1, -1):
            roots = self._roots(minute)
            snap = self.ctx.health_at(minute * 60.0)
            for r, root in enumerate(roots):
                if snap is None:
                    continue
                reach = self._reachable(root, snap)
                if service not in reach or (errors_only and not _any_errors(snap, reach)):
                    continue
                for k in range(self._per_minute(root, minute, r) - 1, -1, -1):
                    t = self._gen(minute, r, k)
                    if t is not None:
                        yield t

    def _gen(self, minute: int, r: int, k: int) -> Trace | None:
        self._check_token()
        trace = self._generate(minute, r, k)
        if trace is not None and not self.ctx.pipeline_up_at(trace.start_us / 1e6):
            return None  # the telemetry pipeline (collector) was down: the spans never arrived
        return trace

    def _check_token(self) -> None:
        tok = (self.ctx.health_token(), self.ctx.history.token)
        if tok != self._gen_token:
            self._generate.cache_clear()
            self._reach.clear()
            self._gen_token = tok

    def _reachable(self, root: Root, snap: AppHealth) -> set[str]:
        """:func:`_reachable`, computed once per root and health snapshot (a query per service
        would otherwise walk the call graph once per service)."""
        self._check_token()
        key = (snap.since, root.caller, root.service, root.operation)
        hit = self._reach.get(key)
        if hit is None:
            hit = self._reach[key] = _reachable(root, snap, self.ctx)
        return hit

    # ------------------------------------------------------------------ generation
    def _generate_uncached(self, minute: int, r: int, k: int) -> Trace | None:
        roots = self._roots(minute)
        if r >= len(roots):
            return None
        root = roots[r]
        snap = self.ctx.health_at(minute * 60.0)
        assert snap is not None
        tid = self._trace_id(minute, r, k)
        g = _Gen(tid, snap, key64(self.ctx.seed, tid))
        start_us = int((minute * 60.0 + unit(g.key, "start") * 60.0) * 1e6)
        if root.caller is not None:
            call = CallSpec(root.service, root.operation, 1.0)
            self._client(g, root.caller, call, None, start_us, 0)
        else:
            self._server(g, root.service, root.operation, None, start_us, 0, "consumer")
        spans = _drop_uninstrumented(g.spans, self.ctx.instrumented)
        if not spans:
            return None
        return Trace(tid, spans)

    def _client(
        self, g: _Gen, caller: str, call: CallSpec, parent: str | None, start_us: int, depth: int
    ) -> tuple[int, bool]:
        """A client (or producer) span and what it leads to; returns (duration, failed)."""
        span_id = g.next_id()
        edge = _edge(g.snap, caller, call.to, call.op)
        callee = g.snap.services.get(call.to)
        op_h = _op(g.snap, call.to, call.op)
        grpc = _is_grpc(call.op)
        tags: dict[str, str | int | float | bool] = {
            "span.kind": "producer" if call.kind == "producer" else "client"
        }
        tags.update(_rpc_tags(call.op, call.to))
        tags.update(_peer_tags(self.ctx.app_service(call.to), call.to))
        if call.kind == "producer" or _is_producer(call.op):
            dur = int(_lognormal(g, 1.0, 5.0) * 1000)
            failed = edge is not None and g.u("pf") < edge.error_ratio
            sym = _pick(edge.symptoms if edge else (), g.u("ps")) if failed else None
            span = self._span(g, span_id, parent, caller, call.op, start_us, dur, "producer", tags)
            if failed:
                _mark_error(span, sym, grpc, server=False, origin=True, status=14)
            return dur, failed
        callee_err = op_h.error_ratio if op_h else 0.0
        reachable = callee is not None and callee.ready_pods > 0 and op_h is not None and op_h.rate > 0
        edge_err = edge.error_ratio if edge else (0.0 if reachable else 1.0)
        pre_fail = (
            edge_err if not reachable else max(0.0, (edge_err - callee_err) / max(1e-9, 1.0 - callee_err))
        )
        sym = _pick(edge.symptoms if edge else (), g.u("es"))
        if not reachable or (pre_fail > 0 and g.u("pre") < pre_fail):
            slow = sym is not None and sym.kind in ("deadline_exceeded", "timeout")
            if sym is None or sym.kind in FAST_FAIL or not slow:
                dur_ms = _lognormal(g, 1.5, 6.0) if not slow else (edge.latency_ms if edge else 1000.0)
            else:
                dur_ms = edge.latency_ms if edge else 1000.0
            dur = int(dur_ms * 1000)
            span = self._span(g, span_id, parent, caller, call.op, start_us, dur, "client", tags)
            if sym is None:
                sym = Symptom("no_endpoints", f"{call.to}: no healthy upstream", call.to)
            _mark_error(span, sym, grpc, server=False, origin=True, status=_grpc_code(sym))
            return dur, True
        net_us = int(200 + 400 * g.u("net"))
        if depth >= MAX_DEPTH:
            dur = net_us * 2
            self._span(g, span_id, parent, caller, call.op, start_us, dur, "client", tags)
            return dur, False
        child_dur, child_failed = self._server(
            g, call.to, call.op, span_id, start_us + net_us, depth + 1, "server"
        )
        dur = child_dur + 2 * net_us
        span = self._span(g, span_id, parent, caller, call.op, start_us, dur, "client", tags)
        if child_failed:
            _mark_error(span, None, grpc, server=False, origin=False, status=13)
        return dur, child_failed

    def _server(
        self, g: _Gen, service: str, op: str, parent: str | None, start_us: int, depth: int, kind: str
    ) -> tuple[int, bool]:
        span_id = g.next_id()
        op_h = _op(g.snap, service, op)
        grpc = _is_grpc(op)
        med = op_h.latency_ms if op_h else 1.0
        p95 = op_h.latency_p95_ms if op_h else 4.0
        target_us = int(_lognormal(g, med, p95) * 1000)
        calls = _calls_of(g.snap, self.ctx, service, op)
        cursor = start_us + int(min(target_us * 0.05, 500) + 50)
        child_failed = False
        p_child = 0.0
        for c in calls:
            e = _edge(g.snap, service, c.to, c.op)
            if not c.optional and e is not None:
                p_child = 1.0 - (1.0 - p_child) * (1.0 - e.error_ratio) ** max(c.n, 0.0)
        for ci, c in enumerate(calls):
            n = min(MAX_CALLS, int(c.n + g.u("n", ci)))
            for _ in range(n):
                dur, failed = self._client(g, service, c, span_id, cursor, depth)
                cursor += dur + int(30 + 100 * g.u("gap"))
                if failed and not c.optional:
                    child_failed = True
                    break
            if child_failed:
                break
        err = op_h.error_ratio if op_h else 0.0
        p_own = max(0.0, (err - p_child) / max(1e-9, 1.0 - p_child))
        own_failed = not child_failed and g.u("own") < p_own
        dur = max(target_us, cursor - start_us + int(100 + 200 * g.u("tail")))
        tags: dict[str, str | int | float | bool] = {"span.kind": kind}
        tags.update(_rpc_tags(op, service))
        span = self._span(g, span_id, parent, service, op, start_us, dur, kind, tags)
        if own_failed:
            sym = _pick(op_h.symptoms if op_h else (), g.u("sym"))
            if sym is None:
                sh = g.snap.services.get(service)
                sym = _pick(sh.symptoms if sh else (), g.u("sym2"))
            _mark_error(span, sym, grpc, server=True, origin=True, status=_grpc_code(sym) if sym else 2)
        elif child_failed:
            _mark_error(span, None, grpc, server=True, origin=False, status=13)
        return dur, own_failed or child_failed

    def _span(
        self,
        g: _Gen,
        span_id: str,
        parent: str | None,
        service: str,
        op: str,
        start_us: int,
        dur: int,
        kind: str,
        tags: dict[str, Any],
    ) -> Span:
        span = Span(
            trace_id=g.trace_id,
            span_id=span_id,
            parent_span_id=parent,
            service=service,
            operation=op,
            start_us=start_us,
            duration_us=max(dur, 1),
            span_kind=kind,
            tags=dict(tags),
            process_tags=self._process(service, start_us / 1e6, g.key),
        )
        g.spans.append(span)
        return span

    def _process(self, service: str, t: float, key: int) -> dict[str, str]:
        ns = self.ctx.namespace()
        pods = [name for name, iv in self._pods_of(service) if any(a <= t < b for a, b in iv)]
        tags = {"service.name": service, "service.namespace": ns, "k8s.namespace.name": ns}
        if pods:
            pod = pods[int(unit(key, service) * len(pods)) % len(pods)]
            tags["k8s.pod.name"] = pod
            tags["host.name"] = pod
        return tags

    def _pods_of(self, service: str) -> list[tuple[str, list[tuple[float, float]]]]:
        if self._pods_token != self.ctx.history.token:
            idx: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
            for rec in self.ctx.history.of(PODS):
                last = rec.latest
                if last is not None:
                    idx.setdefault(self.ctx.service_of(last), []).append((rec.name, rec.alive_intervals()))
            self._pods, self._pods_token = idx, self.ctx.history.token
        return self._pods.get(service, [])


def _drop_uninstrumented(spans: list[Span], instrumented: Callable[[str], bool]) -> list[Span]:
    """Spans of the services that emit them; a kept span whose parent was dropped hangs from the
    nearest kept ancestor (or becomes a root: an external load client's request starts the trace
    at the first instrumented server)."""
    hidden = {s.span_id: s.parent_span_id for s in spans if not instrumented(s.service)}
    if not hidden:
        return spans
    out = []
    for s in spans:
        if s.span_id in hidden:
            continue
        parent = s.parent_span_id
        while parent is not None and parent in hidden:
            parent = hidden[parent]
        s.parent_span_id = parent
        out.append(s)
    return out


# --------------------------------------------------------------------------- call graph helpers
def _roots_of(snap: AppHealth, ctx: TelemetryContext) -> list[Root]:
    app = getattr(ctx.twin, "app", None)
    beh = getattr(app, "behaviour", None)
    roots: list[Root] = []
    if beh is not None:
        load = beh.load
        for ec in load.calls:
            e = _edge(snap, load.service, ec.to, ec.op)
            rate = e.rate if e is not None else 0.0
            if rate > 0:
                roots.append(Root(load.service, ec.to, ec.op, rate))
        for topic in (beh.topics or {}).values():
            for c in topic.consumers:
                op = _op(snap, c.service, c.op)
                if op is not None and op.rate > 0:
                    roots.append(Root(None, c.service, c.op, op.rate))
        return roots
    callees = {e.callee for e in snap.edges}
    for e in snap.edges:
        if e.caller not in callees and e.rate > 0 and not _is_producer(e.operation):
            roots.append(Root(e.caller, e.callee, e.operation, e.rate))
    targeted = {(e.callee, e.operation) for e in snap.edges}
    for sh in snap.services.values():
        for op in sh.operations:
            if (
                (sh.service, op.operation) not in targeted
                and op.rate > 0
                and sh.service not in {r.caller for r in roots}
            ):
                roots.append(Root(None, sh.service, op.operation, op.rate))
    return roots


def _calls_of(snap: AppHealth, ctx: TelemetryContext, service: str, op: str) -> list[CallSpec]:
    spec = ctx.app_service(service)
    if spec is not None and op in getattr(spec, "operations", {}):
        return [
            CallSpec(c.to, c.op, float(c.n), bool(c.optional), str(c.kind)) for c in spec.operations[op].calls
        ]
    sh = snap.services.get(service)
    total = sum(o.rate for o in sh.operations) if sh else 0.0
    if total <= 0:
        return []
    return [
        CallSpec(
            e.callee,
            e.operation,
            e.rate / total,
            False,
            "producer" if _is_producer(e.operation) else "client",
        )
        for e in snap.edges
        if e.caller == service and e.rate > 0
    ]


def _reachable(root: Root, snap: AppHealth, ctx: TelemetryContext) -> set[str]:
    seen: set[str] = set()
    stack = [(root.service, root.operation)]
    if root.caller:
        seen.add(root.caller)
    visited: set[tuple[str, str]] = set()
    while stack:
        s, o = stack.pop()
        if (s, o) in visited:
            continue
        visited.add((s, o))
        seen.add(s)
        for c in _calls_of(snap, ctx, s, o):
            stack.append((c.to, c.op))
    return seen


def _any_errors(snap: AppHealth, services: set[str]) -> bool:
    """Whether any operation or call among ``services`` fails at all in this snapshot."""
    for s in services:
        sh = snap.services.get(s)
        if sh is not None and (sh.ready_pods == 0 or any(o.error_ratio > 0 for o in sh.operations)):
            return True
    return any(e.error_ratio > 0 for e in snap.edges if e.caller in services)


def _edge(snap: AppHealth, caller: str, callee: str, op: str) -> EdgeHealth | None:
    for e in snap.edges:
        if e.caller == caller and e.callee == callee and e.operation == op:
            return e
    for e in snap.edges:
        if e.caller == caller and e.callee == callee:
            return e
    return None


def _op(snap: AppHealth, service: str, op: str) -> OperationHealth | None:
    sh = snap.services.get(service)
    if sh is None:
        return None
    return next((o for o in sh.operations if o.operation == op), None)


def _lognormal(g: _Gen, med: float, p95: float) -> float:
    med = max(med, 1e-3)
    sigma = max(math.log(max(p95, med * 1.01) / med) / _Z95, 0.02)
    u = min(max(g.u("ln"), 1e-9), 1 - 1e-9)
    z = _probit(u)
    return float(med * math.exp(sigma * z))


def _probit(p: float) -> float:
    # Acklam's rational approximation of the standard normal quantile
    a = (
        -3.969683028665376e01,
        2.209460984245205e02,
        -2.759285104469687e02,
        1.383577518672690e02,
        -3.066479806614716e01,
        2.506628277459239e00,
    )
    b = (
        -5.447609879822406e01,
        1.615858368580409e02,
        -1.556989798598866e02,
        6.680131188771972e01,
        -1.328068155288572e01,
    )
    c = (
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e00,
        -2.549732539343734e00,
        4.374664141464968e00,
        2.938163982698783e00,
    )
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    lo = 0.02425
    if p < lo:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
    if p > 1 - lo:
        q = math.sqrt(-2 * math.log(1 - p))
        return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
    q = p - 0.5
    r = q * q
    return (
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
        * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    )


def _pick(symptoms: tuple[Symptom, ...] | list[Symptom], u: float) -> Symptom | None:
    if not symptoms:
        return None
    total = sum(s.ratio or 1.0 for s in symptoms)
    acc = 0.0
    for s in symptoms:
        acc += (s.ratio or 1.0) / total
        if u < acc:
            return s
    return symptoms[-1]


def _kind(span_kind: str) -> str:
    return span_kind.removeprefix("SPAN_KIND_").lower()


def _is_grpc(op: str) -> bool:
    return "/" in op and " " not in op and not op.startswith("/")


def _is_producer(op: str) -> bool:
    return op.lower().endswith((" publish", " send", " produce"))


def _rpc_tags(op: str, service: str) -> dict[str, str | int | float | bool]:
    if _is_grpc(op):
        svc, _, method = op.rpartition("/")
        return {"rpc.system": "grpc", "rpc.service": svc, "rpc.method": method}
    method, _, path = op.partition(" ")
    if path:
        return {"http.request.method": method, "http.method": method, "http.route": path, "url.path": path}
    return {}


_DB_SYSTEMS = {"redis": "redis", "postgres": "postgresql", "mongo": "mongodb", "memcached": "memcached"}


def _peer_tags(spec: Any, callee: str) -> dict[str, str | int | float | bool]:
    """What a client span says about its peer (the only trace of an uninstrumented callee)."""
    tags: dict[str, str | int | float | bool] = {"server.address": callee, "net.peer.name": callee}
    for listen in getattr(spec, "listens", None) or ():
        proto = getattr(listen, "protocol", "")
        if proto in _DB_SYSTEMS:
            tags["db.system"] = _DB_SYSTEMS[proto]
            break
        if proto == "kafka":
            tags["messaging.system"] = "kafka"
            break
    return tags


def _grpc_code(sym: Symptom | None) -> int:
    if sym is None:
        return 2
    return {
        "connection_refused": 14,
        "dns_no_such_host": 14,
        "no_endpoints": 14,
        "network_partition": 14,
        "deadline_exceeded": 4,
        "timeout": 4,
        "auth_failed": 16,
        "feature_flag_failure": 13,
        "flag_error": 13,
    }.get(sym.kind, 2)


def _mark_error(
    span: Span, sym: Symptom | None, grpc: bool, *, server: bool, origin: bool, status: int
) -> None:
    span.error = True
    span.tags["error"] = True
    span.tags["otel.status_code"] = "ERROR"
    msg = ""
    if sym is not None:
        msg = sym.message or DEFAULT_MESSAGES.get(sym.kind, sym.kind).format(target=sym.target or "unknown")
        span.tags["otel.status_description"] = msg
    if grpc:
        span.tags["rpc.grpc.status_code"] = status
    elif span.tags.get("http.method") or span.tags.get("http.request.method") or not server:
        code = 503 if status == 14 else 500
        span.tags["http.status_code"] = code
        span.tags["http.response.status_code"] = code
    if origin and msg:
        span.logs.append(
            (
                span.start_us + span.duration_us,
                {
                    "event": "exception",
                    "exception.type": sym.kind if sym else "Error",
                    "exception.message": msg,
                },
            )
        )


def _matches(trace: Trace, q: TraceQuery) -> bool:
    for s in trace.spans:
        if s.service != q.service:
            continue
        if q.operation and s.operation != q.operation:
            continue
        if q.min_duration_us is not None and s.duration_us < q.min_duration_us:
            continue
        if q.max_duration_us is not None and s.duration_us > q.max_duration_us:
            continue
        if q.tags and not all(_tag_eq(s, k, v) for k, v in q.tags.items()):
            continue
        return True
    return False


def _tag_eq(span: Span, k: str, v: str) -> bool:
    have = span.tags.get(k, span.process_tags.get(k))
    if have is None:
        return False
    if isinstance(have, bool):
        return str(have).lower() == str(v).lower()
    return str(have) == str(v)
