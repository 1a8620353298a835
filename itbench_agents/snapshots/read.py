"""Read a snapshot folder (``layout.py``) into a :class:`~..twin.replay.Recording`.

Folders this project records and ITBench-Lite's own are both read: the processed and the raw
OpenTelemetry forms of ``k8s_objects*.tsv``, the raw and the flattened forms of ``k8s_events*.tsv``,
several observations of one object (the newest at or before the snapshot's moment is served),
several alert captures (the newest at or before it). A file or cell that cannot be read raises
:class:`~.layout.SnapshotError` naming the file, line and column.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pydantic

from ..twin.replay import Recording
from ..twin.telemetry.sources import LogStream, Span, Trace
from .layout import (
    ALERTS_DIR,
    APP_FILE,
    META_FILE,
    METRICS_DIR,
    RULES_FILE,
    SnapshotError,
    SnapshotMeta,
    alerts_file_time,
    cell_json,
    parse_ns,
    read_tsv,
)


def read_meta(folder: Path) -> SnapshotMeta | None:
    """``snapshot.json``, or None for a folder without one (ITBench-Lite's)."""
    p = folder / META_FILE
    if not p.exists():
        return None
    try:
        return SnapshotMeta.model_validate_json(p.read_text())
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "(document)"
        raise SnapshotError(f"{p}: {where}: {first.get('msg')}") from e


def load_snapshot(folder: str | Path) -> tuple[SnapshotMeta | None, Recording]:
    """The folder's metadata (None for an ITBench-Lite folder) and its recording."""
    root = Path(folder)
    if not root.is_dir():
        raise SnapshotError(f"{root}: not a folder")
    meta = read_meta(root)
    captures = _alert_captures(root)
    now = meta.recorded_at if meta else None
    objects = _objects(root)
    if now is None:
        # ITBench-Lite: the last alerts capture, else the newest object observation
        times = [t for t, _ in captures] or [seen[-1][0] for seen in objects.values()]
        if not times:
            raise SnapshotError(
                f"{root}: no snapshot.json, alerts/ capture or k8s_objects*.tsv to date it by"
            )
        now = max(times)
    served = []  # each object's newest observation at or before the moment
    for seen in objects.values():
        before = [o for t, o in seen if t <= now + 1e-6]
        if before:
            served.append(before[-1])
    served += _events(root)
    current = [body for t, body in captures if t <= now + 1e-6]
    alerts = list(((current[-1] if current else {}).get("data") or {}).get("alerts") or [])
    rec = Recording(
        now=now,
        objects=served,
        alerts=alerts,
        rule_groups=_rules(root),
        series=_series(root),
        streams=_streams(root),
        traces=_traces(root),
        dependencies=_links(root),
        namespace=meta.namespace if meta else _namespace(served),
    )
    return meta, rec


# ----------------------------------------------------------------------------- Kubernetes
def _objects(root: Path) -> dict[tuple[str, str, str, str], list[tuple[float, dict[str, Any]]]]:
    """Each object's observations, oldest first: key → [(observed at, object)]."""
    out: dict[tuple[str, str, str, str], list[tuple[float, dict[str, Any]]]] = {}
    for path in sorted(root.glob("k8s_objects*.tsv")):
        for line, row in read_tsv(path):
            raw = "body" not in row and "Body" in row
            text = row.get("Body") if raw else row.get("body")
            obj = _body(path, line, "Body" if raw else "body", text)
            when_text = row.get("timestamp") or row.get("TimestampTime") or row.get("Timestamp") or ""
            try:
                when = parse_ns(when_text) / 1e9
            except ValueError as e:
                raise SnapshotError(f"{path}:{line}: column timestamp: {e}") from e
            meta = obj.get("metadata") or {}
            if not obj.get("kind") or not obj.get("apiVersion") or not meta.get("name"):
                raise SnapshotError(
                    f"{path}:{line}: the body is not a Kubernetes object (apiVersion, kind, metadata.name)"
                )
            key = (
                str(obj["apiVersion"]),
                str(obj["kind"]),
                str(meta.get("namespace") or ""),
                str(meta["name"]),
            )
            out.setdefault(key, []).append((when, obj))
    for seen in out.values():
        seen.sort(key=lambda o: o[0])
    return out


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{path}: not JSON: {e}") from e


def _body(path: Path, line: int, column: str, text: str | None) -> dict[str, Any]:
    """A Kubernetes object from a body cell (JSON; raw OpenTelemetry TSVs may double-encode it)."""
    value = cell_json(path, line, column, text)
    if isinstance(value, str):
        value = cell_json(path, line, column, value)
    if not isinstance(value, dict):
        raise SnapshotError(f"{path}:{line}: column {column}: not a JSON object")
    return value


def _events(root: Path) -> list[dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(root.glob("k8s_events*.tsv")):
        for line, row in read_tsv(path):
            if "Body" in row:
                body = _body(path, line, "Body", row["Body"])
                ev = body.get("object") if isinstance(body.get("object"), dict) else None
                if ev is None or not (ev.get("metadata") or {}).get("name"):
                    raise SnapshotError(f"{path}:{line}: column Body: no event object with metadata.name")
                ev = {"apiVersion": "v1", "kind": "Event", **ev}
            else:  # the flattened form
                n = len(out)
                ev = {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {
                        "name": f"{row.get('object_name', 'event')}.{n:x}",
                        "namespace": row.get("namespace", ""),
                    },
                    "involvedObject": {
                        "kind": row.get("object_kind", ""),
                        "name": row.get("object_name", ""),
                        "namespace": row.get("namespace", ""),
                    },
                    "reason": row.get("reason", ""),
                    "message": row.get("message", ""),
                    "type": row.get("event_kind", "Normal"),
                    "lastTimestamp": row.get("event_time") or None,
                    "count": int(row.get("count") or 1),
                }
            m = ev["metadata"]
            out[(str(m.get("namespace") or ""), str(m["name"]))] = ev
    return list(out.values())


def _namespace(objs: list[dict[str, Any]]) -> str:
    counts = Counter(
        (o.get("metadata") or {}).get("namespace")
        for o in objs
        if o.get("kind") in ("Deployment", "StatefulSet")
    )
    counts.pop(None, None)
    counts.pop("kube-system", None)
    return str(counts.most_common(1)[0][0]) if counts else "default"


# ----------------------------------------------------------------------------- Prometheus
def _alert_captures(root: Path) -> list[tuple[float, dict[str, Any]]]:
    folder = root / ALERTS_DIR
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        body = _json_file(path)
        when = alerts_file_time(path, body)
        if when is None:
            raise SnapshotError(
                f"{path}: no capture time (an alerts_at_<time>.json name or a 'timestamp' field)"
            )
        if isinstance(body, list):
            body = {"status": "success", "data": {"alerts": body}}
        elif isinstance(body, dict) and "data" not in body and "alerts" in body:
            body = {"status": "success", "data": {"alerts": body["alerts"]}}
        if not isinstance(body, dict) or not isinstance((body.get("data") or {}).get("alerts", []), list):
            raise SnapshotError(f"{path}: data.alerts: not a list of alerts")
        out.append((when, body))
    return sorted(out, key=lambda c: c[0])


def _rules(root: Path) -> list[dict[str, Any]]:
    p = root / RULES_FILE
    if not p.exists():
        return []
    groups = _json_file(p)
    if not isinstance(groups, list):
        raise SnapshotError(f"{p}: not a list of rule groups")
    return groups


def _series(root: Path) -> list[tuple[dict[str, str], list[int], list[float]]]:
    series: dict[tuple[str, str], tuple[dict[str, str], list[int], list[float]]] = {}
    folder = root / METRICS_DIR
    for path in sorted(folder.glob("*.tsv")) if folder.is_dir() else []:
        for line, row in read_tsv(path, ("timestamp", "metric_name", "value")):
            key = (row["metric_name"], row.get("tags") or "{}")
            entry = series.get(key)
            if entry is None:
                tags = _tags(path, line, key[1])
                labels = {**{str(k): str(v) for k, v in tags.items()}, "__name__": row["metric_name"]}
                entry = series[key] = (labels, [], [])
            try:
                t_ms = parse_ns(row["timestamp"]) // 1_000_000
            except ValueError as e:
                raise SnapshotError(f"{path}:{line}: column timestamp: {e}") from e
            try:
                v = float(row["value"])
            except ValueError as e:
                raise SnapshotError(f"{path}:{line}: column value: not a number: {row['value']!r}") from e
            entry[1].append(t_ms)
            entry[2].append(v)
    return list(series.values())


def _tags(path: Path, line: int, text: str) -> dict[str, Any]:
    """A ``tags`` cell: JSON, or a Python dict literal (ITBench-Lite's metric files have both)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError) as e:
            raise SnapshotError(f"{path}:{line}: column tags: neither JSON nor a dict literal") from e
    if not isinstance(value, dict):
        raise SnapshotError(f"{path}:{line}: column tags: not an object")
    return value


# ----------------------------------------------------------------------------- Loki
def _streams(root: Path) -> list[LogStream]:
    streams: dict[str, LogStream] = {}
    for path in sorted(root.glob("otel_logs*.tsv")):
        for line, row in read_tsv(path, ("Timestamp", "Body")):
            attrs = _tags(path, line, row.get("ResourceAttributes") or "{}")
            labels = {str(k): str(v) for k, v in attrs.items()}
            try:
                ns = parse_ns(row["Timestamp"])
            except ValueError as e:
                raise SnapshotError(f"{path}:{line}: column Timestamp: {e}") from e
            key = json.dumps(labels, sort_keys=True)
            streams.setdefault(key, LogStream(labels)).entries.append((ns, row["Body"]))
    return list(streams.values())


# ----------------------------------------------------------------------------- Jaeger
def _traces(root: Path) -> list[Trace]:
    spans: dict[str, list[Span]] = {}
    for path in sorted(root.glob("otel_traces*.tsv")):
        for line, row in read_tsv(path, ("Timestamp", "TraceId", "SpanId", "ServiceName")):
            try:
                start_ns = parse_ns(row["Timestamp"])
            except ValueError as e:
                raise SnapshotError(f"{path}:{line}: column Timestamp: {e}") from e
            try:
                duration_ns = int(float(row.get("Duration") or 0))
            except ValueError as e:
                raise SnapshotError(f"{path}:{line}: column Duration: not a number") from e
            attrs = _tags(path, line, row.get("SpanAttributes") or "{}")
            resource = _tags(path, line, row.get("ResourceAttributes") or "{}")
            stamps = cell_json(path, line, "Events.Timestamp", row.get("Events.Timestamp") or "[]")
            fields = cell_json(path, line, "Events.Attributes", row.get("Events.Attributes") or "[]")
            logs = [
                (parse_ns(str(t)) // 1000, {str(k): str(v) for k, v in (f or {}).items()})
                for t, f in zip(stamps, fields, strict=False)
            ]
            status = str(row.get("StatusCode") or "")
            trace_id = row["TraceId"]
            spans.setdefault(trace_id, []).append(
                Span(
                    trace_id=trace_id,
                    span_id=row["SpanId"],
                    parent_span_id=row.get("ParentSpanId") or None,
                    service=row["ServiceName"],
                    operation=row.get("SpanName") or "",
                    start_us=start_ns // 1000,
                    duration_us=duration_ns // 1000,
                    span_kind=(row.get("SpanKind") or "internal").lower().removeprefix("span_kind_"),
                    error=status.lower() in ("error", "status_code_error"),
                    tags={str(k): v for k, v in attrs.items() if isinstance(v, str | int | float | bool)},
                    logs=logs,
                    process_tags={str(k): str(v) for k, v in resource.items() if k != "service.name"},
                )
            )
    return [Trace(tid, ss) for tid, ss in sorted(spans.items())]


def _links(root: Path) -> list[tuple[str, str, int]] | None:
    p = root / APP_FILE
    if not p.exists():
        return None
    arch = _json_file(p)
    deps = arch.get("dependencies") if isinstance(arch, dict) else None
    if not isinstance(deps, list):
        raise SnapshotError(f"{p}: dependencies: not a list")
    out = []
    for i, d in enumerate(deps):
        if not isinstance(d, dict) or "source" not in d or "target" not in d:
            raise SnapshotError(f"{p}: dependencies[{i}]: needs source and target")
        out.append((str(d["source"]), str(d["target"]), int(d.get("calls", 1) or 1)))
    return sorted(out)


def find_snapshots(root: Path) -> dict[str, Path]:
    """Scenario id → folder of each snapshot this project recorded under ``root``, at any depth
    (``itbench snapshot record``'s output, a run folder of ``--record-snapshots``, one snapshot);
    SnapshotError for a ``snapshot.json`` that does not read, or two snapshots of one scenario."""
    if not root.is_dir():
        raise SnapshotError(f"{root}: not a folder")
    candidates = sorted(p.parent for p in root.rglob(META_FILE) if not p.parent.name.endswith(".partial"))
    out: dict[str, Path] = {}
    for folder in candidates:
        meta = read_meta(folder)
        assert meta is not None
        if meta.scenario_id in out:
            raise SnapshotError(
                f"{folder}: a second snapshot of {meta.scenario_id} (the first: {out[meta.scenario_id]}); "
                "name a folder that holds one snapshot of each scenario"
            )
        out[meta.scenario_id] = folder
    return out
