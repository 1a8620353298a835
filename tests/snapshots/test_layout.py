"""ITBench-Lite's layout written and read back (snapshots/layout.py, record.py, read.py): what the
endpoints showed comes back unchanged, ITBench-Lite's own variants read, and a bad folder is refused
naming the file, line and column."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from snapshot_fixtures import NOW, NS, alerts, events, objects, series, streams, traces

from itbench_agents.snapshots.layout import (
    OBJECTS_FILE,
    SnapshotError,
    SnapshotMeta,
    alerts_file_name,
    alerts_file_time,
    iso_ms,
    iso_ns,
    parse_ns,
)
from itbench_agents.snapshots.read import find_snapshots, load_snapshot
from itbench_agents.snapshots.record import Observed, write_observed
from itbench_agents.twin.jaeger.query import span_tags
from itbench_agents.twin.jaeger.server import trace_json


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def observed() -> Observed:
    return Observed(
        now=NOW,
        window_s=600,
        objects=objects(),
        events=events(),
        alerts={"status": "success", "data": {"alerts": alerts()}},
        rule_groups=[{"name": "shop", "rules": []}],
        series=[
            (labels, [[t / 1000, repr(v)] for t, v in zip(ts, vs, strict=True)])
            for labels, ts, vs in series()
        ],
        log_lines=[(s.labels, ts, line) for s in streams() for ts, line in s.entries],
        traces=[trace_json(t) for t in traces()],
        links=[{"parent": "frontend", "child": "cart", "callCount": 120}],
    )


def test_times_round_trip() -> None:
    ns = 1_767_225_600_123_456_789
    assert iso_ns(ns) == "2026-01-01 00:00:00.123456789"
    assert parse_ns(iso_ns(ns)) == ns
    assert parse_ns(iso_ms(1_767_225_600_123)) == 1_767_225_600_123_000_000
    assert parse_ns("2026-01-01T01:00:00+01:00") == 1_767_225_600 * 10**9
    assert parse_ns(str(ns)) == ns
    name = alerts_file_name(NOW + 0.387695)
    assert name == "alerts_at_2026-01-01T00-00-00.387695.json"
    assert alerts_file_time(Path(name), {}) == pytest.approx(NOW + 0.387695)
    with pytest.raises(ValueError, match="not a timestamp"):
        parse_ns("yesterday")


def test_what_the_endpoints_showed_comes_back(tmp_path: Path) -> None:
    counts = write_observed(tmp_path, observed())
    assert counts == {
        "objects": len(objects()),
        "events": 1,
        "alerts": 1,
        "series": 2,
        "samples": 10,
        "log_lines": 3,
        "traces": 1,
        "spans": 2,
    }
    assert sorted(p.name for p in (tmp_path / "metrics").iterdir()) == [
        "cluster.tsv",
        "pod_cart-7d4b9c-x2x2x.tsv",
    ]
    meta, rec = load_snapshot(tmp_path)
    assert meta is None  # no snapshot.json: dated by its alerts capture
    assert rec.now == NOW
    assert rec.namespace == NS
    key = lambda o: (o["kind"], o["metadata"].get("name"))  # noqa: E731
    assert sorted(rec.objects, key=key) == sorted(objects() + events(), key=key)
    assert rec.alerts == alerts()
    assert rec.rule_groups == [{"name": "shop", "rules": []}]
    assert sorted(rec.series, key=_key) == sorted(series(), key=_key)
    assert [(s.labels, s.entries) for s in rec.streams] == [(s.labels, s.entries) for s in streams()]
    assert rec.dependencies == [("frontend", "cart", 120)]
    (got,) = rec.traces
    (want,) = traces()
    assert got.trace_id == want.trace_id
    for a, b in zip(sorted(got.spans, key=lambda s: s.span_id), want.spans, strict=True):
        assert span_tags(a) == span_tags(b)  # kind and error come back as OTLP fields, Jaeger shows the same
        assert (a.span_id, a.parent_span_id, a.service, a.operation, a.start_us, a.duration_us) == (
            b.span_id,
            b.parent_span_id,
            b.service,
            b.operation,
            b.start_us,
            b.duration_us,
        )
        assert (a.span_kind, a.error, a.logs, a.process_tags) == (
            b.span_kind,
            b.error,
            b.logs,
            b.process_tags,
        )


def test_the_newest_observation_at_the_snapshot_moment_is_served(tmp_path: Path) -> None:
    """ITBench-Lite's raw OpenTelemetry objects file, several observations of one object: the newest
    at or before the moment wins; one after it is not served."""
    dep = next(o for o in objects() if o["kind"] == "Deployment")
    with (tmp_path / "k8s_objects_raw.tsv").open("w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["Timestamp", "Body"])
        for t, image in (
            (NOW - 300, "shop/cart:1.0"),
            (NOW - 60, "shop/cart:2.0"),
            (NOW + 60, "shop/cart:3.0"),
        ):
            obj = json.loads(json.dumps(dep))
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
            w.writerow([iso_ns(int(t * 1e9)), json.dumps(json.dumps(obj))])  # double-encoded, quoted
    (tmp_path / "alerts").mkdir()
    (tmp_path / "alerts" / "alerts_in_alerting_state_1.json").write_text(
        json.dumps({"timestamp": "2026-01-01T00:00:00Z", "alerts": alerts()})
    )
    (tmp_path / "k8s_events.tsv").write_text(
        "object_kind\tobject_name\tnamespace\treason\tmessage\tevent_time\tevent_kind\tcount\n"
        f"Pod\tcart-1\t{NS}\tBackOff\tBack-off restarting\t2025-12-31T23:59:00Z\tWarning\t3\n"
    )
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "pod_cart-1.tsv").write_text(
        "timestamp\tmetric_name\tvalue\ttags\n"
        f"2025-12-31 23:59:45\tup\t1\t{{'pod': 'cart-1', 'namespace': '{NS}'}}\n"
    )
    _, rec = load_snapshot(tmp_path)
    assert rec.now == NOW
    (served,) = [o for o in rec.objects if o["kind"] == "Deployment"]
    assert served["spec"]["template"]["spec"]["containers"][0]["image"] == "shop/cart:2.0"
    (ev,) = [o for o in rec.objects if o["kind"] == "Event"]
    assert (ev["reason"], ev["count"], ev["involvedObject"]["name"]) == ("BackOff", 3, "cart-1")
    assert rec.alerts == alerts()
    assert rec.series == [
        ({"pod": "cart-1", "namespace": NS, "__name__": "up"}, [int((NOW - 15) * 1000)], [1.0])
    ]


def _snapshot(tmp_path: Path) -> Path:
    write_observed(tmp_path, observed())
    meta = SnapshotMeta(
        scenario_id="sre/x-v1", app="shop", namespace=NS, seed=1, recorded_at=NOW, window_s=600
    )
    (tmp_path / "snapshot.json").write_text(meta.model_dump_json())
    return tmp_path


@pytest.mark.parametrize(
    ("file", "damage", "message"),
    [
        (
            OBJECTS_FILE,
            lambda t: t.replace('{""apiVersion""', '{apiVersion""', 1),
            r"k8s_objects.tsv:2: column body: not JSON",
        ),
        (
            OBJECTS_FILE,
            lambda t: t.replace('""kind"":""CustomResourceDefinition""', '""kinds"":""x""', 1),
            r"k8s_objects.tsv:2: the body is not a Kubernetes object",
        ),
        (
            "otel_traces.tsv",
            lambda t: t.replace("TraceId", "Trace", 1),
            r"otel_traces.tsv: missing column\(s\) TraceId",
        ),
        (
            "otel_logs_raw.tsv",
            lambda t: t.replace("2025-12-31 ", "31/12/2025 ", 1),
            r"otel_logs_raw.tsv:2: column Timestamp",
        ),
        (
            "metrics/cluster.tsv",
            lambda t: t.replace("1.0", "one", 1),
            r"cluster.tsv:2: column value: not a number",
        ),
        ("metrics/cluster.tsv", lambda t: t.replace("{", "[", 1), r"cluster.tsv:2: column tags"),
        (
            "app.json",
            lambda t: t.replace('"dependencies"', '"deps"', 1),
            r"app.json: dependencies: not a list",
        ),
        ("snapshot.json", lambda t: t.replace('"seed":1', '"seed":"one"', 1), r"snapshot.json: seed: "),
        (
            "snapshot.json",
            lambda t: t.replace('"namespace":"shop",', "", 1),
            r"snapshot.json: namespace: Field required",
        ),
    ],
)
def test_a_bad_folder_is_refused_naming_file_line_and_column(
    tmp_path: Path, file: str, damage: Any, message: str
) -> None:
    folder = _snapshot(tmp_path)
    path = folder / file
    before = path.read_text()
    after = damage(before)
    assert after != before, "the damage must change the file"
    path.write_text(after)
    with pytest.raises(SnapshotError, match=message):
        load_snapshot(folder)


def test_a_bad_alerts_capture_is_refused(tmp_path: Path) -> None:
    folder = _snapshot(tmp_path)
    (capture,) = (folder / "alerts").iterdir()
    capture.write_text("{not json")
    with pytest.raises(SnapshotError, match=r"alerts_at_.*\.json: not JSON"):
        load_snapshot(folder)
    capture.rename(folder / "alerts" / "later.json")
    (folder / "alerts" / "later.json").write_text("[]")
    with pytest.raises(SnapshotError, match="no capture time"):
        load_snapshot(folder)


def test_snapshots_are_found_by_scenario(tmp_path: Path) -> None:
    a = _snapshot(tmp_path / "a")
    assert find_snapshots(a) == {"sre/x-v1": a}
    assert find_snapshots(tmp_path) == {"sre/x-v1": a}
    _snapshot(tmp_path / "b")
    with pytest.raises(SnapshotError, match="a second snapshot of sre/x-v1"):
        find_snapshots(tmp_path)
    with pytest.raises(SnapshotError, match="not a folder"):
        find_snapshots(tmp_path / "missing")
    with pytest.raises(SnapshotError, match="no snapshot.json, alerts/ capture or k8s_objects"):
        load_snapshot(tmp_path / "a" / "metrics")


def test_secrets_are_recorded_only_where_the_agent_can_read_them() -> None:
    """On a live cluster kube-system's tokens and keys must not land in a snapshot folder: only the
    agent's namespaces' Secrets are recorded; Events go to their own file, once."""
    from itbench_agents.snapshots.record import Recorder

    class Info:
        def __init__(self, api_version: str, kind: str) -> None:
            self.api_version, self.kind = api_version, kind

    stored = {
        ("v1", "Secret"): [("shop", "db"), ("kube-system", "bootstrap-token")],
        ("v1", "Event"): [("shop", "e1")],
        ("events.k8s.io/v1", "Event"): [("shop", "e1")],
        ("apps/v1", "Deployment"): [("shop", "cart")],
    }

    class FakeApi:
        def api_resources(self, verbs: tuple[str, ...]) -> list[Info]:
            return [Info(*k) for k in stored]

        def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
            return [
                {"apiVersion": api_version, "kind": kind, "metadata": {"namespace": ns, "name": n}}
                for ns, n in stored[(api_version, kind)]
                if namespace in (None, ns)
            ]

    def names(objs: list[dict[str, Any]]) -> list[str]:
        return sorted(f"{o['kind']} {o['metadata']['namespace']}/{o['metadata']['name']}" for o in objs)

    rec = Recorder(FakeApi(), "http://prom", None, None, NOW, secret_namespaces=["shop"])  # type: ignore[arg-type]
    objs, evs = rec.objects()
    assert names(objs) == ["Deployment shop/cart", "Secret shop/db"]
    assert names(evs) == ["Event shop/e1"]
    everywhere = Recorder(FakeApi(), "http://prom", None, None, NOW)  # type: ignore[arg-type]
    assert "Secret kube-system/bootstrap-token" in names(everywhere.objects()[0])


def test_the_files_read_as_itbench_sre_agents_offline_readers_read_them(tmp_path: Path) -> None:
    """What ITBench-SRE-Agent's ``sre_tools/offline_incident_analysis`` expects of each file (read
    there with pandas' ``read_csv(sep="\\t")``, ``json``, ``ast.literal_eval`` and
    ``datetime.fromisoformat``), checked on a folder we write."""
    import ast
    import datetime as dt
    import re

    import pandas as pd

    write_observed(tmp_path, observed())
    objs = pd.read_csv(tmp_path / "k8s_objects.tsv", sep="\t")
    assert {"timestamp", "object_kind", "object_namespace", "object_name", "body", "namespace"} <= set(
        objs.columns
    )
    assert pd.to_datetime(objs["timestamp"], utc=True).notna().all()
    bodies = [json.loads(b) for b in objs["body"]]
    assert [b["kind"] for b in bodies] == list(objs["object_kind"])
    assert [b["metadata"]["name"] for b in bodies] == list(objs["object_name"])
    events = pd.read_csv(tmp_path / "k8s_events.tsv", sep="\t")
    (body,) = [json.loads(b) for b in events["Body"]]
    assert body["type"] == "ADDED" and body["object"]["involvedObject"]["kind"] == "Pod"
    assert body["object"]["reason"] == "BackOff" and body["object"]["lastTimestamp"]
    for f in (tmp_path / "metrics").iterdir():
        m = pd.read_csv(f, sep="\t")
        assert {"timestamp", "metric_name", "value", "tags"} <= set(m.columns)
        assert pd.to_datetime(m["timestamp"], utc=True).notna().all()
        assert all(isinstance(ast.literal_eval(t), dict) for t in m["tags"])
        assert f.name.split("_", 1)[0] in ("pod", "service", "deployment", "node", "namespace", "cluster.tsv")
    with (tmp_path / "otel_traces.tsv").open(newline="") as fh:
        spans = list(csv.DictReader(fh, delimiter="\t"))
    assert {s["StatusCode"] for s in spans} == {"Error"}
    assert {s["SpanKind"] for s in spans} == {"Server", "Client"}
    for s in spans:
        dt.datetime.fromisoformat(s["Timestamp"])
        assert float(s["duration_ms"]) > 0 and int(s["Duration"]) == float(s["duration_ms"]) * 1e6
    (root,) = [s for s in spans if not s["ParentSpanId"]]
    assert {s["ParentSpanId"] for s in spans} - {""} == {root["SpanId"]}
    logs = pd.read_csv(tmp_path / "otel_logs_raw.tsv", sep="\t")
    assert {"Timestamp", "Body", "ResourceAttributes"} <= set(logs.columns) and len(logs) == 3
    (capture,) = (tmp_path / "alerts").iterdir()
    assert re.search(r"alerts_at_(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?", capture.stem)
    assert (
        json.loads(capture.read_text())["data"]["alerts"][0]["labels"]["alertname"] == "HighRequestErrorRate"
    )
    arch = json.loads((tmp_path / "app.json").read_text())
    assert [s["name"] for s in arch["components"]["services"]] == ["cart", "frontend"]
    assert arch["dependencies"] == [{"source": "frontend", "target": "cart", "calls": 120}]
