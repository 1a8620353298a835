"""A recorded cluster served as it was (twin/replay.py): objects as recorded, alerts, PromQL, LogQL
and Jaeger over the recording, nothing acting, and an agent's credential that can only read."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from snapshot_fixtures import NOW, NS, POD_UID, recording

from itbench_agents.harness.access import grant_agent_access
from itbench_agents.k8s.client import KubeApi, KubeApiError
from itbench_agents.twin.replay import Recording, replay_twin


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    twin = replay_twin(recording())
    twin.admin_token = "admin-of-the-replay"
    twin.serve(tmp_path_factory.mktemp("replay"))
    try:
        yield twin
    finally:
        twin.close()


def _admin(twin: Any) -> KubeApi:
    return KubeApi(twin.endpoints.kube_url, token=twin.admin_token)


def test_objects_are_served_as_recorded(served: Any) -> None:
    pod = _admin(served).get("v1", "Pod", NS, "cart-7d4b9c-x2x2x")
    assert pod["metadata"]["uid"] == POD_UID
    assert pod["metadata"]["creationTimestamp"] == "2025-12-31T23:50:00Z"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 7
    dep = _admin(served).get("apps/v1", "Deployment", NS, "cart")
    assert dep["status"] == {"replicas": 1, "readyReplicas": 0, "observedGeneration": 3}
    assert dep["metadata"]["generation"] == 3


def test_custom_kinds_of_recorded_crds_are_served(served: Any) -> None:
    chaos = _admin(served).list("chaos-mesh.org/v1alpha1", "PodChaos", NS)
    assert [c["metadata"]["name"] for c in chaos] == ["kill-cart"]


def test_nothing_acts_and_the_clock_stands_still(served: Any) -> None:
    """No controller: the crash-looping pod is not replaced, no node or system object appears."""
    api = _admin(served)
    served.sync()
    assert served.now() == NOW
    assert [p["metadata"]["name"] for p in api.list("v1", "Pod", NS)] == ["cart-7d4b9c-x2x2x"]
    assert api.list("v1", "Node") == []


@pytest.mark.kubectl
def test_kubectl_reads_the_recording(served: Any) -> None:
    out = subprocess.run(
        ["kubectl", "--kubeconfig", served.endpoints.kubeconfig, "get", "events", "-n", NS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "Back-off restarting failed container cart" in out.stdout


def test_the_agent_credential_can_read_but_not_write(served: Any) -> None:
    _, reader = grant_agent_access(_admin(served), [NS], write=False)
    agent = KubeApi(served.endpoints.kube_url, token=reader)
    assert agent.get("apps/v1", "Deployment", NS, "cart")["metadata"]["name"] == "cart"
    with pytest.raises(KubeApiError) as e:
        agent.delete("chaos-mesh.org/v1alpha1", "PodChaos", NS, "kill-cart")
    assert e.value.code == 403
    assert _admin(served).list("chaos-mesh.org/v1alpha1", "PodChaos", NS)


def test_alerts_and_rules_are_the_recorded_ones(served: Any) -> None:
    prom = served.endpoints.prometheus_url
    alerts = requests.get(prom + "/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    assert alerts == [
        {
            "labels": {"alertname": "HighRequestErrorRate", "namespace": NS, "service_name": "frontend"},
            "annotations": {"summary": "frontend is failing"},
            "state": "firing",
            "activeAt": "2025-12-31T23:56:00Z",
            "value": "5e-01",
        }
    ]
    am = requests.get(prom + "/api/v2/alerts", timeout=10).json()
    assert [a["labels"]["alertname"] for a in am] == ["HighRequestErrorRate"]
    groups = requests.get(prom + "/api/v1/rules", timeout=10).json()["data"]["groups"]
    assert [g["name"] for g in groups] == ["shop"]


def test_promql_runs_over_the_recorded_samples(served: Any) -> None:
    body = requests.get(
        served.endpoints.prometheus_url + "/api/v1/query",
        params={"query": "increase(kube_pod_container_status_restarts_total[1m])"},
        timeout=10,
    ).json()
    assert body["status"] == "success"
    (result,) = body["data"]["result"]
    assert result["value"][0] == NOW
    assert float(result["value"][1]) == pytest.approx(4.0 * 60 / 60, rel=0.35)
    now = requests.get(
        served.endpoints.prometheus_url + "/api/v1/query", params={"query": "time()"}, timeout=10
    ).json()
    assert float(now["data"]["result"][1]) == NOW


def test_logql_and_jaeger_answer_from_the_recording(served: Any) -> None:
    loki = served.endpoints.loki_url
    body = requests.get(
        loki + "/loki/api/v1/query_range",
        params={
            "query": '{namespace="shop"} |= "refused"',
            "start": str(int((NOW - 600) * 1e9)),
            "end": str(int(NOW * 1e9)),
        },
        timeout=10,
    ).json()
    lines = [v[1] for s in body["data"]["result"] for v in s["values"]]
    assert sorted(lines) == [f"panic: redis: connection refused ({i})" for i in range(3)]
    jaeger = served.endpoints.jaeger_url
    traces = requests.get(
        jaeger + "/api/traces",
        params={"service": "frontend", "lookback": "1h", "tags": '{"error":"true"}'},
        timeout=10,
    ).json()["data"]
    assert [t["traceID"] for t in traces] == ["4bf92f3577b34da6a3ce929d0e0e4736"]
    deps = requests.get(
        jaeger + "/api/dependencies", params={"endTs": int(NOW * 1000), "lookback": 3_600_000}, timeout=10
    ).json()["data"]
    assert deps == [{"parent": "frontend", "child": "cart", "callCount": 120}]


def test_an_object_the_api_server_would_not_store_is_named(tmp_path: Path) -> None:
    from itbench_agents.twin.kube.errors import ApiError

    bad = Recording(
        now=NOW, objects=[{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}]
    )
    with pytest.raises(ApiError, match="Widget"):
        replay_twin(bad)
    left_out: list[str] = []  # `snapshot serve` of an ITBench-Lite folder: served without them, named
    replay_twin(Recording(now=NOW, objects=[*bad.objects, *recording().objects[-1:]]), left_out)
    assert left_out == ["example.com/v1 Widget /w"]
    namespace = next(o for o in recording().objects if o.get("kind") == "Namespace")
    with pytest.raises(ApiError) as e:
        replay_twin(Recording(now=NOW, objects=[namespace, namespace]))
    assert "already exists" in str(e.value)


def test_recording_the_replay_gives_the_recording_back(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """record(replay(x)) == x over the real wire protocols: the recorder's reads (raw samples through a
    range selector, log lines in pages — two lines a page here, so the paging is crossed —, traces
    per service, dependency links, alerts verbatim) lose and duplicate nothing."""
    from itbench_agents.snapshots import record

    monkeypatch.setattr(record, "LOG_PAGE", 2)
    ep = served.endpoints
    rec = record.Recorder(_admin(served), ep.prometheus_url, ep.loki_url, ep.jaeger_url, NOW, window_s=600)
    seen = record.observe(rec)
    want = recording()
    assert seen.shown_alerts == want.alerts
    got_series = sorted(
        (sorted(labels.items()), [round(float(t) * 1000) for t, _ in values], [float(v) for _, v in values])
        for labels, values in seen.series
    )
    assert got_series == sorted((sorted(lb.items()), ts, vs) for lb, ts, vs in want.series)
    assert seen.log_lines == [(s.labels, ts, line) for s in want.streams for ts, line in s.entries]
    assert [t["traceID"] for t in seen.traces] == [t.trace_id for t in want.traces]
    assert sum(len(t["spans"]) for t in seen.traces) == 2
    assert seen.links == [{"parent": "frontend", "child": "cart", "callCount": 120}]
    names = {(o["kind"], (o.get("metadata") or {}).get("name")) for o in seen.objects + seen.events}
    assert {(o["kind"], o["metadata"]["name"]) for o in want.objects} <= names


def test_log_streams_labelled_the_opentelemetry_way_are_recorded_too(tmp_path: Path) -> None:
    """Where OpenTelemetry ships the logs, streams carry ``k8s_namespace_name``, not ``namespace``."""
    from itbench_agents.snapshots.record import Recorder
    from itbench_agents.twin.telemetry.sources import LogStream

    line = (int((NOW - 10) * 1e9), "GET /cart 500")
    twin = replay_twin(Recording(now=NOW, streams=[LogStream({"k8s_namespace_name": NS}, [line])]))
    twin.serve(tmp_path)
    try:
        ep = twin.endpoints
        rec = Recorder(KubeApi(ep.kube_url), ep.prometheus_url, ep.loki_url, None, NOW, window_s=600)
        assert rec.log_lines() == [({"k8s_namespace_name": NS}, *line)]
    finally:
        twin.close()
    empty = replay_twin(Recording(now=NOW))
    empty.serve(tmp_path / "empty")
    try:
        ep = empty.endpoints
        assert Recorder(KubeApi(ep.kube_url), ep.prometheus_url, ep.loki_url, None, NOW).log_lines() == []
    finally:
        empty.close()


def test_what_a_recording_limit_cuts_short_is_said(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from itbench_agents.snapshots import record

    monkeypatch.setattr(record, "LOG_PAGE", 2)
    monkeypatch.setattr(record, "MAX_LOG_LINES", 2)
    monkeypatch.setattr(record, "TRACES_PER_QUERY", 1)
    ep = served.endpoints
    rec = record.Recorder(_admin(served), ep.prometheus_url, ep.loki_url, ep.jaeger_url, NOW, window_s=600)
    assert len(rec.log_lines()) == 2
    rec.traces()
    assert rec.truncated == [
        "logs: the first 2 lines of the window",
        "traces: frontend's 1 newest traces of the window",
        "traces: frontend's 1 newest error traces of the window",
    ]
