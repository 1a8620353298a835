"""ITBench-Lite's snapshot layout: the file names and row formats, written and read.

One folder per incident (ITBench-Lite: ``snapshots/sre/v0.2-<uuid>/Scenario-N/``), read by
ITBench-SRE-Agent's offline tools (``sre_tools/offline_incident_analysis``):

| file | rows |
|---|---|
| ``alerts/alerts_at_<YYYY-MM-DDTHH-MM-SS.ffffff>.json`` | one ``/api/v1/alerts`` answer per capture; the capture time is in the name |
| ``k8s_objects.tsv`` | the processed form: ``timestamp``, ``object_kind``, ``object_namespace``, ``object_name``, ``body`` (the object's JSON); ``namespace`` repeats ``object_namespace`` for the topology builder, which reads that column. The raw OpenTelemetry form (``Timestamp``/``TimestampTime``, ``Body``) is read too |
| ``k8s_events.tsv`` | OpenTelemetry's k8sobjects receiver in watch mode: ``Timestamp``, ``Body`` = ``{"type": "ADDED", "object": <Event>}`` |
| ``otel_traces.tsv`` | the ClickHouse exporter's span columns: ``Timestamp`` (ns text), ``TraceId``, ``SpanId``, ``ParentSpanId``, ``SpanName``, ``SpanKind`` (``Server``/``Client``/...), ``ServiceName``, ``ResourceAttributes``, ``SpanAttributes``, ``Duration`` (ns), ``StatusCode`` (``Error``/``Unset``), ``StatusMessage``, ``Events.Timestamp``, ``Events.Attributes``; and ``duration_ms``, which ITBench-SRE-Agent's trace analyzer reads |
| ``otel_logs_raw.tsv`` | the ClickHouse exporter's log columns: ``Timestamp`` (ns text), ``TraceId``, ``SpanId``, ``SeverityText``, ``ServiceName``, ``Body``, ``ResourceAttributes`` (the Loki stream's labels), ``LogAttributes`` |
| ``metrics/<kind>_<name>.tsv`` | ``timestamp``, ``metric_name``, ``value``, ``tags`` (every label, JSON), one file per object the series belong to (``pod_<pod>``, ``service_<service>``, ...) |
| ``app.json`` | the architecture the topology builder reads: ``components.services[].name``, ``dependencies[]{source, target, calls}`` |
| ``ground_truth.yaml`` | the incident's ground truth: ``groups`` (``root_cause``), ``aliases``, ``propagations``, ``fault`` |

Attribute maps are JSON objects whose values keep their JSON types (ClickHouse keeps strings: a
snapshot read back serves ``http.status_code`` as the number it was). ``snapshot.json``
(:class:`SnapshotMeta`) is this project's: the scenario, seed and recorded moment, and what the
harness needs to score a diagnosis on the snapshot; Lite folders have none.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

FORMAT = "itbench-snapshot/v1"
META_FILE = "snapshot.json"
ALERTS_DIR = "alerts"
RULES_FILE = "prometheus_rules.json"
OBJECTS_FILE = "k8s_objects.tsv"
EVENTS_FILE = "k8s_events.tsv"
TRACES_FILE = "otel_traces.tsv"
LOGS_FILE = "otel_logs_raw.tsv"
METRICS_DIR = "metrics"
APP_FILE = "app.json"
GROUND_TRUTH_FILE = "ground_truth.yaml"

OBJECT_COLUMNS = ["timestamp", "object_kind", "object_namespace", "namespace", "object_name", "body"]
EVENT_COLUMNS = ["Timestamp", "Body"]
TRACE_COLUMNS = [
    "Timestamp",
    "TraceId",
    "SpanId",
    "ParentSpanId",
    "SpanName",
    "SpanKind",
    "ServiceName",
    "ResourceAttributes",
    "SpanAttributes",
    "Duration",
    "StatusCode",
    "StatusMessage",
    "Events.Timestamp",
    "Events.Attributes",
    "duration_ms",
]
LOG_COLUMNS = [
    "Timestamp",
    "TraceId",
    "SpanId",
    "SeverityText",
    "ServiceName",
    "Body",
    "ResourceAttributes",
    "LogAttributes",
]
METRIC_COLUMNS = ["timestamp", "metric_name", "value", "tags"]
SPAN_KINDS = {
    "server": "Server",
    "client": "Client",
    "producer": "Producer",
    "consumer": "Consumer",
    "internal": "Internal",
}


class SnapshotError(ValueError):
    """A snapshot folder that cannot be read: names the file (and row, field) at fault."""


class SnapshotMeta(BaseModel):
    """What this project records beside ITBench-Lite's files (``snapshot.json``)."""

    format: str = FORMAT
    scenario_id: str
    app: str
    namespace: str
    """The app's namespace."""
    namespaces: list[str] = Field(default_factory=list)
    """The task's other namespaces (a team's, which the scenario deploys with the app): the agent
    may read these too."""
    seed: int
    recorded_at: float
    """The recorded moment (Unix seconds): the agent's turn would have started then."""
    injected_at: float | None = None
    window_s: float
    """How far back the telemetry goes from ``recorded_at``."""
    masked: list[str] = Field(default_factory=list)
    alerts_expected: list[str] = Field(default_factory=list)
    """The scenario's expected alerts that were firing at the recorded moment."""
    alerts_missing: list[str] = Field(default_factory=list)
    fault_objects: list[str] = Field(default_factory=list)
    """Topology keys of the objects that existed when the alerts fired (the scorer's ``at_fault``)."""
    replicasets_before: list[str] = Field(default_factory=list)
    """Topology keys of the ReplicaSets before the faults (a release is one made since)."""
    call_edges: list[tuple[str, str, str]] = Field(default_factory=list)
    """The app's call graph: (namespace, caller workload, callee workload)."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Rows written per kind of data (objects, events, series, samples, log lines, spans, alerts)."""
    truncated: list[str] = Field(default_factory=list)
    """What hit a recording limit and was cut short (log lines, traces per service)."""


# ----------------------------------------------------------------------------- times
def iso_ms(ms: int) -> str:
    """``2025-12-01 21:16:24.123`` (UTC, milliseconds): a metric sample's time."""
    t = _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def iso_ns(ns: int) -> str:
    """``2025-12-01 21:16:24.123456789`` (UTC, nanoseconds): ClickHouse's DateTime64(9) as text."""
    t = _dt.datetime.fromtimestamp(ns // 1_000_000_000, _dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ns % 1_000_000_000:09d}"


_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$")


def parse_ns(text: str) -> int:
    """Nanoseconds since the epoch from ``YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±hh:mm]`` (UTC when
    no zone is given) or from an integer count of nanoseconds; ValueError otherwise."""
    s = text.strip()
    if s.isdigit():
        return int(s)
    m = _TIME.match(s)
    if m is None:
        raise ValueError(f"not a timestamp: {text!r}")
    day, hh, mm, ss, frac, zone = m.groups()
    base = _dt.datetime.fromisoformat(f"{day}T{hh}:{mm}:{ss}" + ("+00:00" if zone in (None, "Z") else zone))
    return int(base.timestamp()) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))


def alerts_file_name(t: float) -> str:
    """``alerts_at_2025-12-15T18-17-09.387695.json`` for the capture at ``t`` (Unix seconds)."""
    d = _dt.datetime.fromtimestamp(t, _dt.UTC)
    return f"alerts_at_{d.strftime('%Y-%m-%dT%H-%M-%S.%f')}.json"


_ALERTS_AT = re.compile(r"alerts_at_(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?")


def alerts_file_time(path: Path, body: Any) -> float | None:
    """A capture's time: the body's ``timestamp`` where it has one, else the file name's."""
    if isinstance(body, dict) and isinstance(body.get("timestamp"), str):
        try:
            return parse_ns(body["timestamp"]) / 1e9
        except ValueError:
            pass
    m = _ALERTS_AT.search(path.stem)
    if m is None:
        return None
    day, hh, mm, ss, frac = m.groups()
    return parse_ns(f"{day}T{hh}:{mm}:{ss}{frac or ''}Z") / 1e9


# ----------------------------------------------------------------------------- values
def dumps(value: Any) -> str:
    """Compact JSON for a TSV cell (no tab or newline survives unescaped)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def fmt_float(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def metric_file(labels: dict[str, str]) -> str:
    """The object a series belongs to, as ITBench-Lite names metric files (``pod_<name>``...)."""
    for label, kind in (
        ("pod", "pod"),
        ("service_name", "service"),
        ("service", "service"),
        ("deployment", "deployment"),
        ("statefulset", "statefulset"),
        ("node", "node"),
        ("namespace", "namespace"),
    ):
        if labels.get(label):
            return f"{kind}_{_safe(labels[label])}"
    return "cluster"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:200] or "_"


# ----------------------------------------------------------------------------- TSV
def write_tsv(path: Path, columns: list[str], rows: Iterable[list[str]]) -> int:
    """Write a header and rows (tab-separated, RFC 4180 quoting where a cell needs it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow(row)
            n += 1
    return n


def read_tsv(path: Path, required: Iterable[str] = ()) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a TSV file with a header; SnapshotError naming the file for a missing
    column."""
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t")
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise SnapshotError(
                f"{path}: missing column(s) {', '.join(missing)} (header: {', '.join(header)})"
            )
        for row in reader:
            yield reader.line_num, {k: v for k, v in row.items() if k is not None}


def cell_json(path: Path, line: int, column: str, text: str | None) -> Any:
    """A cell's JSON, or SnapshotError naming file, line and column."""
    try:
        return json.loads(text or "")
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{path}:{line}: column {column}: not JSON: {e}") from e
