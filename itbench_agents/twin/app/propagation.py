"""From cluster state to app health: the call graph evaluated at one instant.

1. *Outcomes* bottom-up: for every operation, given that a request reaches it, the probability
   it fails and its latency (own service time × CPU throttling + the calls it makes, in order; a
   failing required call stops the request; optional calls only log).
2. *Rates* top-down from the load generator: each call carries the caller's rate × the share of
   requests that get that far × fan-out; calls that cannot connect never arrive, so traffic drops
   downstream of a failure. Kafka topics carry producer rates to consumer groups (lag integrates).
3. CPU demand follows from rates, throttling from CPU limits, and the two passes repeat once.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from ...k8s.quantity import quantity
from ..faults.effects import Effects, Row
from ..health import AppHealth, EdgeHealth, OperationHealth, ServiceHealth, Symptom
from .cluster import ClusterView, Instance
from .model import Call, Operation
from .network import Conn, connect, http_chaos_for

SPAN = {"server": "SPAN_KIND_SERVER", "consumer": "SPAN_KIND_CONSUMER", "internal": "SPAN_KIND_INTERNAL"}


@dataclass
class Outcome:
    err: float
    p50: float
    p95: float
    symptoms: list[tuple[str, str, float, str | None]] = field(
        default_factory=list
    )  # kind, msg, ratio, target
    reach_before: list[float] = field(default_factory=list)  # per call: share of requests that get there


@dataclass
class EdgeOut:
    err: float
    p50: float
    p95: float
    arrive: float  # share of calls that arrive at the callee process
    symptoms: list[tuple[str, str, float, str | None]]


@dataclass
class LagState:
    lag: float = 0.0
    growth: float = 0.0
    t: float = 0.0


@dataclass(frozen=True)
class Leak:
    """Memory leaked by one running container: ``bytes`` at ``t``, growing at ``rate`` since."""

    started: float
    bytes: float
    rate: float
    t: float

    def at(self, now: float) -> float:
        return self.bytes + self.rate * max(0.0, now - self.t)


@dataclass
class ServiceLoad:
    """Per-service resource picture (the runtime's ``usage`` and OOM timing read it)."""

    cpu_demand_per_pod: float = 0.0
    cpu_limit: float | None = None
    throttle: float = 1.0
    leak_bytes_per_s_per_pod: float = 0.0
    extra_memory: float = 0.0


@dataclass
class Result:
    health: AppHealth
    load: dict[str, ServiceLoad]
    lags: dict[str, LagState]
    outcomes: dict[tuple[str, str], Outcome]
    entry_conns: dict[str, Conn]


def _tail(p50: float, p95: float, t: float) -> float:
    """P(latency > t) for a log-normal through (p50, p95)."""
    if t <= 0:
        return 1.0
    if p50 <= 0:
        return 0.0
    sigma = max(1e-6, math.log(max(p95, p50 * 1.0001) / p50) / 1.645)
    z = (math.log(t) - math.log(p50)) / sigma
    return 0.5 * math.erfc(z / math.sqrt(2))


class Propagation:
    def __init__(
        self,
        view: ClusterView,
        effects: Effects,
        lags: dict[str, LagState],
        leaks: dict[tuple[str, str], Leak] | None = None,
    ) -> None:
        self.leaks = leaks or {}
        self.view = view
        self.b = view.app.behaviour
        self.fx = effects
        self.prev_lags = lags
        self.conns: dict[tuple[str, str], Conn] = {}
        self.serving = {s: view.serving(s) for s in self.b.services}
        self.order = self._topo()
        self._http_chaos = any(ch.kind == "HTTPChaos" for ch in view.chaos)
        """Whether any HTTPChaos runs: without one, no edge looks for one on its endpoints."""

    # ------------------------------------------------------------------ graph order
    def _topo(self) -> list[tuple[str, str]]:
        """Operations callers-first (Kafka consumers after their topic's producers)."""
        nodes = [(s, o) for s, svc in self.b.services.items() for o in svc.operations]
        succ: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
        for s, svc in self.b.services.items():
            for o, op in svc.operations.items():
                for c in op.calls:
                    succ[(s, o)].add((c.to, c.op))
        for t in self.b.topics.values():
            for prod in t.producers:
                for cons in t.consumers:
                    succ[(prod[0], prod[1])].add((cons.service, cons.op))
        indeg = {n: 0 for n in nodes}
        for n in nodes:
            for m in succ[n]:
                indeg[m] = indeg.get(m, 0) + 1
        ready = sorted(n for n in nodes if indeg[n] == 0)
        out: list[tuple[str, str]] = []
        while ready:
            n = ready.pop(0)
            out.append(n)
            for m in sorted(succ[n]):
                indeg[m] -= 1
                if indeg[m] == 0:
                    ready.append(m)
        out += [n for n in nodes if n not in out]  # cycles: append in declaration order
        return out

    # ------------------------------------------------------------------ connections
    def caller_instance(self, s: str) -> tuple[Instance | None, dict[str, str]]:
        insts = self.serving[s] or self.view.instances_of(s)
        if not insts:
            return None, {}
        return insts[0], insts[0].env

    def conn(self, s: str, callee: str) -> Conn:
        key = (s, callee)
        if key not in self.conns:
            inst, env = self.caller_instance(s)
            dep = self.b.services[s].dependencies[callee]
            self.conns[key] = connect(self.view, inst, callee, dep, env)
        return self.conns[key]

    # ------------------------------------------------------------------ outcomes (bottom-up)
    def outcomes(self, throttle: dict[str, float], rates: dict[tuple[str, str], float]) -> dict:
        memo: dict[tuple[str, str], Outcome] = {}
        self.edges: dict[tuple[str, str, int], EdgeOut] = {}
        for s, o in reversed(self.order):
            memo[(s, o)] = self._outcome(s, o, memo, throttle, rates)
        return memo

    def _local_rows(self, s: str, o: str) -> list[Row]:
        return [r for r in self.fx.op.get(s, []) if r.op in (None, o)]

    def _outcome(self, s: str, o: str, memo: dict, throttle: dict[str, float], rates: dict) -> Outcome:
        svc = self.b.services[s]
        op = svc.operations[o]
        th = throttle.get(s, 1.0)
        p50 = op.latency_ms.p50 * th
        p95 = op.latency_ms.p95 * th
        syms: list[tuple[str, str, float, str | None]] = []
        local_err = 0.0
        for r in self._local_rows(s, o):
            local_err = 1 - (1 - local_err) * (1 - r.error_ratio)
            p50 += r.latency_ms
            p95 += r.latency_ms * 1.5
            syms.append((r.kind, r.message, r.error_ratio or 1.0, None))
        if th > 1.5:
            syms.append(
                (
                    "cpu_throttled",
                    f"CPU throttled: demand {th:.1f}x the CPU limit; requests slow down",
                    1.0,
                    None,
                )
            )
        if svc.max_rps is not None:
            pods = max(1, len(self.serving[s]))
            total = sum(rates.get((s, x), 0.0) for x in svc.operations) / pods
            if total > svc.max_rps:
                over = 1 - svc.max_rps / total
                local_err = 1 - (1 - local_err) * (1 - over)
                p50 *= min(20.0, total / svc.max_rps)
                p95 *= min(20.0, total / svc.max_rps) * 1.5
                syms.append(("overloaded", f"server overloaded: {total:.0f} req/s per pod", over, None))
        reach = 1 - local_err
        reach_before: list[float] = []
        for i, c in enumerate(op.calls):
            e = self._edge(s, o, i, c, memo)
            reach_before.append(reach)
            n = float(c.n)
            if n >= 1:
                succ = (1 - e.err) ** n
                lat50 = n * e.p50
                lat95 = e.p95 + (n - 1) * e.p50
            else:
                succ = 1 - n * e.err
                lat50 = n * e.p50
                lat95 = e.p95 if n >= 0.05 else n * e.p95
            p50 += reach * lat50
            p95 += lat95 if reach > 0.05 else reach * lat95
            if e.err > 0:
                share = reach * (1 - succ)
                for kind, msg, ratio, target in e.symptoms:
                    syms.append((kind, msg, min(1.0, ratio * reach), target))
                if not c.optional and share > 0:
                    pass
            if not c.optional:
                reach *= succ
        return Outcome(1 - reach, p50, max(p95, p50), syms, reach_before)

    def _edge(self, s: str, o: str, i: int, c: Call, memo: dict) -> EdgeOut:
        dep = self.b.services[s].dependencies[c.to]
        conn = self.conn(s, c.to)
        callee = memo.get((c.to, c.op)) or Outcome(0.0, 1.0, 2.0)
        callee_op: Operation = self.b.services[c.to].operations[c.op]
        timeout = dep.timeout_ms
        refused, hang, lat = conn.refused, conn.timeout, conn.latency_ms
        syms: list[tuple[str, str, float, str | None]] = [(k, m, r, c.to) for k, m, r in conn.symptoms]
        server_err = callee.err
        # HTTP chaos on the callee pods the calls land on
        if self._http_chaos and conn.endpoints and callee_op.http_method:
            share = conn.reach / len(conn.endpoints)
            port = next(iter(conn.endpoints[0].listens_on(self.b.services[c.to])), 0)
            for ep in conn.endpoints:
                for ch in http_chaos_for(self.view, ep, callee_op, port):
                    spec = ch.spec
                    if spec.get("abort"):
                        refused += share
                        syms.append(
                            (
                                "http_abort",
                                f"{c.op}: connection reset by peer (HTTPChaos {ch.name})",
                                share,
                                c.to,
                            )
                        )
                    if spec.get("delay"):
                        from ..faults.chaos import parse_duration

                        lat += (parse_duration(spec["delay"]) or 0.0) * 1000 * share
                    if spec.get("replace") or spec.get("patch"):
                        server_err = 1 - (1 - server_err) * (1 - share)
                        where = "request" if spec.get("target") == "Request" else "response"
                        syms.append(
                            (
                                "http_tampered",
                                f"{c.op}: unexpected {where} body: JSON parse error (HTTPChaos {ch.name})",
                                share,
                                c.to,
                            )
                        )
        refused = min(1.0, refused)
        arrive = max(0.0, 1 - refused - hang)
        slow = _tail(callee.p50 + lat, callee.p95 + lat, timeout)
        if slow > 0.01 and arrive > 0:
            syms.append(
                ("deadline_exceeded", f"{c.op} timed out after {timeout / 1000:g}s", arrive * slow, c.to)
            )
        if server_err > 0 and arrive > 0:
            msg = next((m for k, m, r, t in callee.symptoms if r > 0), f"{c.to} {c.op} failed")
            syms.append(("upstream_error", f"{c.to} {c.op}: {msg}", arrive * server_err, c.to))
        err = refused + hang + arrive * (1 - (1 - server_err) * (1 - slow))
        for r in self.fx.edge.get((s, c.to), []):
            if r.op in (None, c.op):
                err = 1 - (1 - err) * (1 - r.error_ratio)
                lat += r.latency_ms
                syms.append((r.kind, r.message, r.error_ratio, c.to))
                if r.error_ratio >= 1:
                    arrive = 0.0
                else:
                    arrive *= 1 - r.error_ratio
        err = min(1.0, err)
        fail_fast = refused + (1 - refused - hang) * 0  # refused calls return in ~1 ms
        if hang + arrive * slow >= 0.5:
            p50 = timeout
        elif fail_fast >= 0.5:
            p50 = 1.0
        else:
            p50 = min(timeout, callee.p50 + lat)
        p95 = timeout if hang + arrive * slow >= 0.05 else min(timeout, callee.p95 + lat)
        out = EdgeOut(err, p50, max(p50, p95), arrive, syms)
        self.edges[(s, o, i)] = out
        return out

    # ------------------------------------------------------------------ rates (top-down)
    def rates(self, memo: dict[tuple[str, str], Outcome], now: float) -> tuple[dict, dict, dict, dict]:
        rate: dict[tuple[str, str], float] = defaultdict(float)
        edge_rate: dict[tuple[str, str, int], float] = {}
        entry_rate: dict[int, float] = {}
        load = self.b.load
        lags: dict[str, LagState] = {}
        load_up = self.b.services[load.service].external or bool(self.serving.get(load.service))
        for i, ec in enumerate(load.calls):
            r = self._entry_rate(i, load_up)
            entry_rate[i] = r
            rate[(ec.to, ec.op)] += (
                r * self.conn(load.service, ec.to).reach
                if ec.to in self.b.services[load.service].dependencies
                else r
            )
        topic_in: dict[str, float] = defaultdict(float)
        for s, o in self.order:
            for tname, t in self.b.topics.items():
                for cons in t.consumers:
                    if (cons.service, cons.op) == (s, o):
                        rate[(s, o)] = self._consume(tname, cons, topic_in[tname], now, lags)
            r = rate[(s, o)]
            if not self.serving[s]:
                rate[(s, o)] = r = 0.0
            out = memo[(s, o)]
            op = self.b.services[s].operations[o]
            for i, c in enumerate(op.calls):
                er = r * out.reach_before[i] * c.n
                edge_rate[(s, o, i)] = er
                e = self.edges.get((s, o, i))
                arrive = e.arrive if e else 1.0
                rate[(c.to, c.op)] += er * arrive
                if c.kind == "producer":
                    for tname, t in self.b.topics.items():
                        if (s, o) in [tuple(p) for p in t.producers] and t.broker == c.to:
                            ok = er * (1 - (e.err if e else 0.0))
                            topic_in[tname] += ok * (1 + self.fx.topic_mult.get(tname, 0.0))
        return rate, edge_rate, entry_rate, lags

    def _consume(self, topic: str, cons, produced: float, now: float, lags: dict[str, LagState]) -> float:  # noqa: ANN001
        t = self.b.topics[topic]
        prev = self.prev_lags.get(cons.group, LagState(t=now))
        lag = max(0.0, prev.lag + prev.growth * (now - prev.t))
        up = bool(self.serving[cons.service]) and bool(self.serving[t.broker])
        if up and t.broker in self.b.services[cons.service].dependencies:
            up = self.conn(cons.service, t.broker).reach > 0.5
        cap = self.fx.consumer_capacity.get(cons.service, cons.capacity)
        consumed = (cap if lag > 0 else min(produced, cap)) if up else 0.0
        growth = produced - consumed
        if lag <= 0 and growth < 0:
            growth = 0.0
        lags[cons.group] = LagState(lag, growth, now)
        return consumed

    # ------------------------------------------------------------------ resources
    def loads(self, rate: dict[tuple[str, str], float]) -> dict[str, ServiceLoad]:
        out = {}
        for s, svc in self.b.services.items():
            insts = self.serving[s] or self.view.instances_of(s)
            n = max(1, len(self.serving[s]))
            demand = svc.resources.cpu + self.fx.cpu.get(s, 0.0)
            demand += sum(rate.get((s, o), 0.0) * op.cpu_per_request for o, op in svc.operations.items()) / n
            limit = None
            if insts:
                lim = (insts[0].container.get("resources") or {}).get("limits") or {}
                limit = quantity(lim.get("cpu"))
                limit = limit if limit else None
            th = max(1.0, demand / limit) if limit else 1.0
            leak = (
                self.fx.leak_per_request.get(s, 0.0) * sum(rate.get((s, o), 0.0) for o in svc.operations) / n
            )
            out[s] = ServiceLoad(demand, limit, th, leak, self.fx.memory.get(s, 0.0))
        return out

    # ------------------------------------------------------------------ all together
    def run(self, now: float) -> Result:
        throttle = {s: 1.0 for s in self.b.services}
        memo = self.outcomes(throttle, {})
        rates, edge_rate, entry_rate, lags = self.rates(memo, now)
        loads = self.loads(rates)
        throttle = {s: ld.throttle for s, ld in loads.items()}
        if any(th > 1.0 for th in throttle.values()) or any(
            self._overloaded(s, rates) for s in self.b.services
        ):
            memo = self.outcomes(throttle, rates)
            rates, edge_rate, entry_rate, lags = self.rates(memo, now)
            loads = self.loads(rates)
        return Result(self._health(now, memo, rates, edge_rate, loads, lags), loads, lags, memo, {})

    def _overloaded(self, s: str, rates: dict[tuple[str, str], float]) -> bool:
        """Whether ``rates`` bring service ``s`` past its ``max_rps`` per pod. The first pass of
        :meth:`run` has no rates and no throttling: a second pass where no service is throttled or
        overloaded would compute the very same outcomes, so it is skipped."""
        svc = self.b.services[s]
        if svc.max_rps is None:
            return False
        pods = max(1, len(self.serving[s]))
        return sum(rates.get((s, x), 0.0) for x in svc.operations) / pods > svc.max_rps

    def _health(
        self, now: float, memo: dict, rates: dict, edge_rate: dict, loads: dict, lags: dict
    ) -> AppHealth:
        services: dict[str, ServiceHealth] = {}
        edges: list[EdgeHealth] = []
        consumer_ops = {(c.service, c.op): c for t in self.b.topics.values() for c in t.consumers}
        for s, svc in self.b.services.items():
            ops = []
            svc_syms: list[Symptom] = []
            up = bool(self.serving[s]) or svc.external
            for o, op in svc.operations.items():
                out = memo[(s, o)]
                err = out.err
                syms = out.symptoms
                cons = consumer_ops.get((s, o))
                if cons is not None:
                    for row in self.fx.consumer_errors.get(s, []):
                        err = 1 - (1 - err) * (1 - row.error_ratio)
                        syms = [*syms, (row.kind, row.message, row.error_ratio, None)]
                r = rates.get((s, o), 0.0) if up else 0.0
                sym_t = tuple(Symptom(k, m, t, round(min(1.0, x), 4)) for k, m, x, t in _dedupe(syms))
                ops.append(
                    OperationHealth(
                        s,
                        o,
                        SPAN[op.kind],
                        round(r, 6),
                        round(min(1.0, err), 6),
                        round(out.p50, 3),
                        round(out.p95, 3),
                        sym_t,
                    )
                )
                for i, c in enumerate(op.calls):
                    e = self.edges[(s, o, i)]
                    edges.append(
                        EdgeHealth(
                            s,
                            c.to,
                            c.op,
                            round(edge_rate.get((s, o, i), 0.0), 6),
                            round(e.err, 6),
                            round(e.p50, 3),
                            round(e.p95, 3),
                            tuple(
                                Symptom(k, m, t, round(min(1.0, x), 4)) for k, m, x, t in _dedupe(e.symptoms)
                            ),
                        )
                    )
            if s == self.b.load.service:
                for i, ec in enumerate(self.b.load.calls):
                    conn = self.conn(s, ec.to) if ec.to in svc.dependencies else Conn()
                    callee = memo[(ec.to, ec.op)]
                    er = 1 - conn.reach * (1 - callee.err)
                    edges.append(
                        EdgeHealth(
                            s,
                            ec.to,
                            ec.op,
                            round(self._entry_rate(i, up), 6),
                            round(er, 6),
                            round(callee.p50 + conn.latency_ms, 3),
                            round(callee.p95 + conn.latency_ms, 3),
                            tuple(Symptom(k, m, ec.to, round(x, 4)) for k, m, x in conn.symptoms),
                        )
                    )
            for kind, msg in self.fx.notes.get(s, []):
                svc_syms.append(Symptom(kind, msg, None, 1.0))
            if s in self.fx.not_serving:
                svc_syms.append(Symptom("unready", self.fx.not_serving[s], None, 1.0))
            ld = loads[s]
            if ld.throttle > 1.0:
                svc_syms.append(
                    Symptom("high_cpu", f"CPU demand {ld.cpu_demand_per_pod:.2f} cores > limit", None, 1.0)
                )
            gauges: list[tuple[str, tuple[tuple[str, str], ...], float]] = []
            for tname, t in self.b.topics.items():
                for cons in t.consumers:
                    if cons.service == s and cons.group in lags:
                        st = lags[cons.group]
                        gauges.append(
                            (
                                "kafka_consumer_group_lag",
                                (("group", cons.group), ("topic", tname)),
                                round(st.lag, 1),
                            )
                        )
                        gauges.append(
                            (
                                "kafka_consumer_group_members",
                                (("group", cons.group), ("topic", tname)),
                                float(len(self.serving[s])),
                            )
                        )
                        if st.lag > 0 or st.growth > 0:
                            svc_syms.append(
                                Symptom(
                                    "kafka_consumer_lag",
                                    f"consumer group {cons.group} lag {st.lag:.0f} on {tname}",
                                    tname,
                                )
                            )
            services[s] = ServiceHealth(
                service=s,
                ready_pods=sum(1 for i in self.view.instances_of(s) if i.ready),
                desired_pods=self.view.desired(s),
                operations=tuple(ops),
                symptoms=tuple(svc_syms),
                cpu_cores_per_pod=round(min(ld.cpu_demand_per_pod, ld.cpu_limit or 1e9), 6),
                memory_bytes_per_pod=round(
                    self.b.services[s].resources.memory + ld.extra_memory + self._leaked(s, ld, now), 1
                ),
                extra_gauges=tuple(gauges),
            )
        return AppHealth(since=now, services=services, edges=tuple(edges), namespace=self.view.ns)

    def _leaked(self, s: str, ld: ServiceLoad, now: float) -> float:
        """Memory a leak has added so far, averaged over the service's running pods (capped at the limit)."""
        if not self.serving[s]:
            return 0.0
        from ..runtime import started_at

        out = []
        base = self.b.services[s].resources.memory + ld.extra_memory
        for inst in self.serving[s]:
            start = started_at(inst.pod, inst.container.get("name", ""), False, now)
            rec = self.leaks.get((inst.pod["metadata"].get("uid", ""), inst.container.get("name", "")))
            grown = (
                rec.at(now)
                if rec and rec.started == start
                else ld.leak_bytes_per_s_per_pod * max(0.0, now - start)
            )
            limit = quantity(((inst.container.get("resources") or {}).get("limits") or {}).get("memory"))
            out.append(min(grown, max(0.0, limit - base)) if limit else grown)
        return sum(out) / len(out)

    def _entry_rate(self, i: int, up: bool) -> float:
        ec = self.b.load.calls[i]
        return (ec.rate + self.fx.rate_add.get((ec.to, ec.op), 0.0)) * self._users_factor() if up else 0.0

    def _users_factor(self) -> float:
        """The load service's users over the users the baseline rates are for (1 without
        ``users_env``, or when no serving pod sets a number)."""
        load = self.b.load
        if load.users_env is None:
            return 1.0
        for inst in self.serving.get(load.service) or []:
            try:
                users = float(inst.env.get(load.users_env, ""))
            except ValueError:
                continue
            return max(0.0, users) / load.users
        return 1.0


def _dedupe(syms: list[tuple[str, str, float, str | None]]) -> list[tuple[str, str, float, str | None]]:
    seen: dict[tuple[str, str, str | None], float] = {}
    for k, m, r, t in syms:
        key = (k, m, t)
        seen[key] = max(seen.get(key, 0.0), r)
    return [(k, m, r, t) for (k, m, t), r in seen.items()]
