"""OTel Collector ``spanmetrics`` series from the health timeline.

For each (service, span name, span kind, status code) the connector keeps a cumulative call
counter and a latency histogram (buckets of the otel demo). Here, per key, the health timeline
gives a piecewise-constant *rate* of calls, of errors and of calls per latency bucket (latency is
log-normal with the snapshot's median and p95); counters are the integral of that rate, evaluated
at a slightly jittered time (``t ± 5 s`` from a seeded hash) and floored to whole calls. A
jittered time keeps every counter monotone (the jitter is below half the scrape interval), keeps
buckets consistent with ``_count`` and makes ``rate()`` noisy like real traffic while averaging to
the health rate. Server spans come from operations, client spans from edges; services the app
model marks ``instrumented: false`` (brokers, databases, flagd) have no spans of their own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..health import AppHealth
from .context import TelemetryContext
from .noise import key64, ms_since, uniform
from .profile import Profile
from .seriesdb import SeriesDef, add_series
from .sources import MetricMetadata

BUCKETS_MS: tuple[float, ...] = (2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000)
JITTER_S = 5.0
CALLS = "traces_span_metrics_calls_total"
DURATION = "traces_span_metrics_duration_milliseconds"
OK, ERROR = "STATUS_CODE_UNSET", "STATUS_CODE_ERROR"
_Z95 = 1.6448536269514722


def le_label(b: float) -> str:
    return "+Inf" if math.isinf(b) else (str(int(b)) if float(b).is_integer() else str(b))


@lru_cache(maxsize=4096)
def lognormal_cdf(median_ms: float, p95_ms: float) -> tuple[float, ...]:
    """P(latency <= le) for each finite bucket bound."""
    med = max(median_ms, 1e-3)
    sigma = max(math.log(max(p95_ms, med * 1.01) / med) / _Z95, 0.02)
    mu = math.log(med)
    return tuple(0.5 * (1.0 + math.erf((math.log(b) - mu) / (sigma * math.sqrt(2.0)))) for b in BUCKETS_MS)


@lru_cache(maxsize=4096)
def lognormal_mean(median_ms: float, p95_ms: float) -> float:
    med = max(median_ms, 1e-3)
    sigma = max(math.log(max(p95_ms, med * 1.01) / med) / _Z95, 0.02)
    return med * math.exp(sigma * sigma / 2.0)


def client_kind(operation: str) -> str:
    low = operation.lower()
    if low.endswith((" publish", " send", " produce")):
        return "SPAN_KIND_PRODUCER"
    return "SPAN_KIND_CLIENT"


LE_LABELS = tuple(le_label(b) for b in (*BUCKETS_MS, math.inf))
SpanKey = tuple[str, str, str]  # service, span name, span kind
NCOL = 2 + len(BUCKETS_MS)  # count rate, sum rate, bucket rates


@dataclass
class SpanProfile:
    key: SpanKey
    ok: Profile  # columns: [calls/s, ms/s, calls/s with latency <= le for each bucket]
    err: Profile


def _components(
    snap: AppHealth, instrumented: Callable[[str], bool]
) -> dict[SpanKey, list[tuple[float, float, float, float]]]:
    """Span rates per key: server/consumer spans of instrumented services' operations and client /
    producer spans of instrumented callers (calls *to* an uninstrumented broker or database still
    count: the caller's client span exists, the callee's server span does not)."""
    comps: dict[SpanKey, list[tuple[float, float, float, float]]] = {}
    for sh in snap.services.values():
        for op in sh.operations:
            svc = op.service or sh.service
            if not instrumented(svc):
                continue
            k = (svc, op.operation, op.span_kind)
            comps.setdefault(k, []).append((op.rate, op.error_ratio, op.latency_ms, op.latency_p95_ms))
    for e in snap.edges:
        if not instrumented(e.caller):
            continue
        k = (e.caller, e.operation, client_kind(e.operation))
        comps.setdefault(k, []).append((e.rate, e.error_ratio, e.latency_ms, e.latency_p95_ms))
    return comps


def _row(comps: list[tuple[float, float, float, float]], error: bool) -> np.ndarray:
    row = np.zeros(NCOL)
    for rate, err, med, p95 in comps:
        r = rate * (err if error else 1.0 - err)
        if r <= 0:
            continue
        row[0] += r
        row[1] += r * lognormal_mean(med, p95)
        row[2:] += r * np.asarray(lognormal_cdf(med, p95))
    return row


class SpanProfiler:
    """Builds :class:`SpanProfile` per key from the snapshots, incrementally: the timeline only
    appends (or replaces its last snapshot), so only snapshots not seen before are processed and
    earlier rows are copied over. A long history costs once, not at every health change."""

    def __init__(self, instrumented: Callable[[str], bool] = lambda _service: True) -> None:
        self.instrumented = instrumented
        self._seen: list[AppHealth] = []
        self._ok: dict[SpanKey, np.ndarray] = {}
        self._err: dict[SpanKey, np.ndarray] = {}

    def update(self, snaps: list[AppHealth]) -> dict[SpanKey, SpanProfile]:
        keep = min(len(self._seen), len(snaps))
        while keep > 0 and self._seen[keep - 1] is not snaps[keep - 1]:
            keep -= 1
        if keep and any(a is not b for a, b in zip(self._seen[:keep], snaps[:keep], strict=True)):
            keep = 0  # not an extension of what we saw: start over
        new = [_components(s, self.instrumented) for s in snaps[keep:]]
        keys = set(self._ok) | {k for c in new for k in c}
        n = len(snaps)
        ok_all: dict[SpanKey, np.ndarray] = {}
        err_all: dict[SpanKey, np.ndarray] = {}
        for k in keys:
            ok = np.zeros((n, NCOL))
            err = np.zeros((n, NCOL))
            if k in self._ok and keep:
                ok[:keep] = self._ok[k][:keep]
                err[:keep] = self._err[k][:keep]
            for i, c in enumerate(new, start=keep):
                comps = c.get(k)
                if comps:
                    ok[i] = _row(comps, False)
                    err[i] = _row(comps, True)
            ok_all[k], err_all[k] = ok, err
        self._seen, self._ok, self._err = list(snaps), ok_all, err_all
        times = np.asarray([s.since for s in snaps], dtype=np.float64)
        return {
            k: SpanProfile(k, Profile(times, ok_all[k]), Profile(times, err_all[k])) for k in sorted(keys)
        }


def span_profiles(ctx: TelemetryContext) -> dict[SpanKey, SpanProfile]:
    """All span profiles from scratch (one-shot helper)."""
    return SpanProfiler(ctx.instrumented).update(ctx.snapshots())


class SpanMetricsFamily:
    def __init__(self, ctx: TelemetryContext) -> None:
        self.ctx = ctx
        self._token: object = None
        self._series: dict[str, list[SeriesDef]] = {}
        self._profiler = SpanProfiler(ctx.instrumented)

    def metadata(self) -> dict[str, MetricMetadata]:
        return {
            CALLS: MetricMetadata(
                "counter", "Number of spans (calls) per service, span name, kind and status."
            ),
            DURATION + "_bucket": MetricMetadata("histogram", "Span duration histogram.", "ms"),
            DURATION + "_sum": MetricMetadata("histogram", "Span duration histogram.", "ms"),
            DURATION + "_count": MetricMetadata("histogram", "Span duration histogram.", "ms"),
        }

    def series(self, name: str) -> list[SeriesDef]:
        tok = self.ctx.health_token()
        if tok != self._token:
            self._build()
            self._token = tok
        return self._series.get(name, [])

    def _build(self) -> None:
        ns = self.ctx.namespace()
        seed = self.ctx.seed
        out: dict[str, list[SeriesDef]] = {}
        for (svc, span, kind), sp in self._profiler.update(self.ctx.snapshots()).items():
            for status, prof in ((OK, sp.ok), (ERROR, sp.err)):
                start = prof.first_positive()
                if math.isinf(start):
                    continue
                base = {
                    "service_name": svc,
                    "span_name": span,
                    "span_kind": kind,
                    "status_code": status,
                    "namespace": ns,
                    "job": f"{ns}/{svc}",
                }
                group = _HistogramGroup(
                    prof,
                    key64(seed, "spanmetrics", svc, span, kind, status),
                    self.ctx.epoch,
                    self.ctx.pipeline_up,
                )
                add_series(out, CALLS, base, group.column(0), start)
                add_series(out, DURATION + "_count", base, group.column(0), start)
                add_series(out, DURATION + "_sum", base, group.column(1), start)
                for j, le in enumerate(LE_LABELS):
                    col = 2 + j if j < len(BUCKETS_MS) else 0
                    add_series(out, DURATION + "_bucket", {**base, "le": le}, group.column(col), start)
        self._series = out


class _HistogramGroup:
    """Renders all columns of one (key, status) at once and remembers the last grid."""

    def __init__(
        self, prof: Profile, key: int, epoch: float, up: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> None:
        self.prof = prof
        self.key = key
        self.epoch = epoch
        self.up = up
        """Whether the telemetry pipeline (the collector that runs the spanmetrics connector) ran
        at each time: no samples while it is down."""
        self._memo: tuple[tuple[float, int], np.ndarray] | None = None  # one attribute: thread-safe swap

    def values(self, t: np.ndarray) -> np.ndarray:
        gid = (float(t[0]), len(t)) if len(t) else (0.0, 0)
        memo = self._memo
        if memo is not None and memo[0] == gid:
            return memo[1]
        jitter = (2.0 * uniform(self.key, ms_since(t, self.epoch)) - 1.0) * JITTER_S
        tw = np.maximum(t + jitter, self.prof.start)
        v = self.prof.integral(tw)
        counts = np.floor(v + 1e-9)
        counts[:, 1] = np.round(v[:, 1], 3)
        # buckets never exceed the count; cumulative buckets never decrease with le
        counts[:, 2:] = np.minimum(np.maximum.accumulate(counts[:, 2:], axis=1), counts[:, :1])
        absent = counts[:, 0] < 1
        if self.up is not None:
            absent |= ~self.up(t)
        counts[absent] = np.nan
        self._memo = (gid, counts)
        return counts

    def column(self, j: int):  # type: ignore[no-untyped-def]
        def render(t: np.ndarray) -> np.ndarray:
            return self.values(t)[:, j]

        return render
