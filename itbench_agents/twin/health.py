"""The contract between the behaviour model (``twin/app``) and telemetry (``twin/telemetry``).

The behaviour model turns cluster state into *health*: for every service and operation, a
request rate, an error ratio, latency, and the symptoms a log or a span would show. Health is
piecewise constant between state changes: the model appends a new :class:`AppHealth` snapshot to
a :class:`HealthTimeline` each time the cluster changes in a way that matters. Telemetry is then a
pure function of (timeline, time, seed): rates become counters, latencies become histogram
buckets, symptoms become log lines and span attributes, with seeded noise.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Symptom:
    """Something a service experiences that logs and spans reveal.

    ``kind`` is a stable machine name (``connection_refused``, ``deadline_exceeded``,
    ``dns_no_such_host``, ``oom``, ``auth_failed``, ``flag_error``, ``feature_flag_failure``,
    ``http_abort``, ``kafka_produce_error``, ``kafka_consumer_lag``, ``gc_pause``, ``high_cpu``,
    ``slow_image``, ``crash``, ``unready``...); ``target`` the peer or resource involved;
    ``message`` the human text the app would print; ``ratio`` the fraction of requests affected.
    """

    kind: str
    message: str
    target: str | None = None
    ratio: float = 1.0


@dataclass(frozen=True)
class OperationHealth:
    """One operation (span name) of one service, as seen by that service (span_kind server/consumer)."""

    service: str
    operation: str
    span_kind: str  # SPAN_KIND_SERVER | SPAN_KIND_CLIENT | SPAN_KIND_CONSUMER | SPAN_KIND_PRODUCER | SPAN_KIND_INTERNAL
    rate: float  # requests per second
    error_ratio: float  # 0..1
    latency_ms: float  # median
    latency_p95_ms: float
    symptoms: tuple[Symptom, ...] = ()


@dataclass(frozen=True)
class EdgeHealth:
    """Calls from ``caller`` to ``callee`` (a client span on the caller side)."""

    caller: str
    callee: str
    operation: str  # the callee operation being called
    rate: float
    error_ratio: float
    latency_ms: float
    latency_p95_ms: float
    symptoms: tuple[Symptom, ...] = ()


@dataclass(frozen=True)
class ServiceHealth:
    service: str
    ready_pods: int
    desired_pods: int
    operations: tuple[OperationHealth, ...] = ()
    symptoms: tuple[Symptom, ...] = ()
    cpu_cores_per_pod: float = 0.0
    memory_bytes_per_pod: float = 0.0
    extra_gauges: tuple[tuple[str, tuple[tuple[str, str], ...], float], ...] = ()
    """Service-specific gauges (metric name, labels, value): kafka consumer lag, valkey memory..."""

    @property
    def healthy(self) -> bool:
        return self.ready_pods > 0 and all(op.error_ratio < 0.05 for op in self.operations)


@dataclass(frozen=True)
class AppHealth:
    """Health of every service of the app from ``since`` until the next snapshot."""

    since: float
    services: dict[str, ServiceHealth] = field(default_factory=dict)
    edges: tuple[EdgeHealth, ...] = ()
    namespace: str = ""


class HealthTimeline:
    """Append-only, time-ordered snapshots; ``at(t)`` is the snapshot in force at ``t``."""

    def __init__(self) -> None:
        self._times: list[float] = []
        self._snaps: list[AppHealth] = []

    def append(self, snap: AppHealth) -> None:
        if self._times and snap.since < self._times[-1]:
            raise ValueError("health snapshots must be appended in time order")
        if self._times and snap.since == self._times[-1]:
            self._snaps[-1] = snap
            return
        if self._snaps and same_health(self._snaps[-1], snap):
            return
        self._times.append(snap.since)
        self._snaps.append(snap)

    def at(self, t: float) -> AppHealth | None:
        i = bisect.bisect_right(self._times, t) - 1
        return self._snaps[i] if i >= 0 else None

    def between(self, t0: float, t1: float) -> list[AppHealth]:
        """Snapshots in force at any moment of [t0, t1], in order."""
        i = max(0, bisect.bisect_right(self._times, t0) - 1)
        j = bisect.bisect_right(self._times, t1)
        return self._snaps[i:j]

    def __len__(self) -> int:
        return len(self._snaps)


def same_health(a: AppHealth, b: AppHealth) -> bool:
    """Whether two snapshots tell the same health (their times aside)."""
    return a.services == b.services and a.edges == b.edges and a.namespace == b.namespace
