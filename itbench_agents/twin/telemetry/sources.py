"""Contracts between telemetry producers and the query engines / HTTP APIs.

- :class:`SeriesSource` feeds the PromQL engine (``twin/prometheus``).
- :class:`LogSource` feeds LogQL (``twin/loki``) and ``kubectl logs`` (``twin/kube``).
- :class:`TraceSource` feeds the Jaeger query API (``twin/jaeger``).

The twin's telemetry (``twin/telemetry``) implements all three from the health timeline and the
store's change log; tests implement them over fixed data (e.g. PromQL conformance ``load`` blocks).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Protocol, runtime_checkable

import numpy as np

# Prometheus' staleness marker: a NaN with a specific bit pattern.
STALE_NAN: float = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]


def is_stale(v: float) -> bool:
    return math.isnan(v) and struct.pack("<d", v) == struct.pack("<Q", 0x7FF0000000000002)


MatchOp = Literal["=", "!=", "=~", "!~"]


@dataclass(frozen=True)
class Matcher:
    """A label matcher as in PromQL/LogQL selectors. Regexes are fully anchored."""

    name: str
    op: MatchOp
    value: str

    def matches(self, labels: dict[str, str]) -> bool:
        v = labels.get(self.name, "")
        if self.op == "=":
            return v == self.value
        if self.op == "!=":
            return v != self.value
        rx = _anchored(self.value)
        ok = rx.fullmatch(v) is not None
        return ok if self.op == "=~" else not ok


_RX_CACHE: dict[str, re.Pattern[str]] = {}


def _anchored(pattern: str) -> re.Pattern[str]:
    rx = _RX_CACHE.get(pattern)
    if rx is None:
        rx = re.compile(f"(?:{pattern})", re.DOTALL)
        _RX_CACHE[pattern] = rx
    return rx


def match_all(matchers: Sequence[Matcher], labels: dict[str, str]) -> bool:
    return all(m.matches(labels) for m in matchers)


# --------------------------------------------------------------------------- metrics
@dataclass
class Series:
    """One time series: labels (with ``__name__``) and samples, timestamps ascending (ms)."""

    labels: dict[str, str]
    timestamps_ms: np.ndarray  # int64
    values: np.ndarray  # float64; STALE_NAN marks staleness


@dataclass(frozen=True)
class MetricMetadata:
    type: str  # counter | gauge | histogram | summary | unknown
    help: str
    unit: str = ""


@runtime_checkable
class SeriesSource(Protocol):
    def select(self, matchers: Sequence[Matcher], start_ms: int, end_ms: int) -> list[Series]:
        """Every series matching all ``matchers`` with its samples in [start_ms, end_ms]."""
        ...

    def label_names(self, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()) -> list[str]: ...

    def label_values(
        self, name: str, start_ms: int, end_ms: int, matchers: Sequence[Matcher] = ()
    ) -> list[str]: ...

    def metadata(self) -> dict[str, MetricMetadata]: ...


# --------------------------------------------------------------------------- logs
@dataclass
class LogStream:
    """A Loki stream: fixed labels and lines, timestamps ascending (ns)."""

    labels: dict[str, str]
    entries: list[tuple[int, str]] = field(default_factory=list)


@runtime_checkable
class LogSource(Protocol):
    def streams(self, matchers: Sequence[Matcher], start_ns: int, end_ns: int) -> list[LogStream]:
        """Streams matching the selector with their entries in [start_ns, end_ns)."""
        ...

    def label_names(self, start_ns: int, end_ns: int) -> list[str]: ...

    def label_values(self, name: str, start_ns: int, end_ns: int) -> list[str]: ...

    def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        previous: bool = False,
        since_time: float | None = None,
        tail_lines: int | None = None,
        timestamps: bool = False,
    ) -> str:
        """What ``kubectl logs`` prints. Raises ``LookupError`` with the kubelet's wording when the
        container has no (previous) instance, e.g. 'previous terminated container "x" in pod "y" not found'."""
        ...


# --------------------------------------------------------------------------- traces
@dataclass
class Span:
    trace_id: str  # 32 hex chars
    span_id: str  # 16 hex chars
    parent_span_id: str | None
    service: str
    operation: str
    start_us: int
    duration_us: int
    span_kind: str  # server | client | producer | consumer | internal
    error: bool = False
    tags: dict[str, str | int | float | bool] = field(default_factory=dict)
    logs: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # (timestamp_us, fields)
    process_tags: dict[str, str] = field(default_factory=dict)


@dataclass
class Trace:
    trace_id: str
    spans: list[Span]

    @cached_property
    def start_us(self) -> int:
        """When its first span started."""
        return min(s.start_us for s in self.spans)


@dataclass(frozen=True)
class TraceQuery:
    service: str
    operation: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    start_us: int = 0
    end_us: int = 0
    min_duration_us: int | None = None
    max_duration_us: int | None = None
    limit: int = 20


@runtime_checkable
class TraceSource(Protocol):
    def services(self) -> list[str]: ...

    def operations(self, service: str, span_kind: str | None = None) -> list[tuple[str, str]]:
        """(operation name, span kind) pairs of a service."""
        ...

    def find_traces(self, query: TraceQuery) -> list[Trace]: ...

    def get_trace(self, trace_id: str) -> Trace | None: ...

    def dependencies(self, end_ms: int, lookback_ms: int) -> list[tuple[str, str, int]]:
        """(parent service, child service, call count) over the window."""
        ...
