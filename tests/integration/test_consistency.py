"""Issue 4's "done when": for the same moment, ``kubectl logs``, Loki, Jaeger and Prometheus tell the
same story about a fault, its alert and its fix.

Everything goes through the served endpoints with the real clients: ``/usr/bin/kubectl`` against
the twin's kube API, ``requests`` against Loki and Jaeger, ``prometheus-api-client`` against the
Prometheus API. Time moves only through ``POST /itbench/v1/advance`` on a ManualClock twin with a
fixed seed, so every answer is deterministic.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from support.kubectl_cluster import KUBECTL, run_kubectl

from itbench_agents.k8s.times import parse_rfc3339, rfc3339
from itbench_agents.twin.clock import ManualClock

pytestmark = pytest.mark.kubectl

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
NS = "otel-demo"
ERRORS = "traces_span_metrics_calls_total"
STEP = 15  # the rule evaluation interval


# --------------------------------------------------------------------------- the served twin
@dataclass
class Served:
    twin: Any
    kubeconfig: str
    kube: str
    prom_url: str
    loki: str
    jaeger: str

    # ---- time
    def now(self) -> float:
        r = requests.get(self.kube + "/itbench/v1/now", timeout=30)
        r.raise_for_status()
        return float(r.json()["unix"])

    def advance(self, seconds: float) -> float:
        r = requests.post(self.kube + "/itbench/v1/advance", json={"seconds": seconds}, timeout=120)
        r.raise_for_status()
        return float(r.json()["unix"])

    # ---- kubectl
    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.kubeconfig, "-n", NS, *args, check=check)

    def pods(self, prefix: str) -> list[dict[str, Any]]:
        items = json.loads(self.kubectl("get", "pods", "-o", "json").stdout)["items"]
        return [p for p in items if p["metadata"]["name"].startswith(prefix + "-")]

    def pod_logs(self, pod: str, since: float) -> list[tuple[int, str]]:
        out = self.kubectl("logs", pod, "--timestamps", f"--since-time={rfc3339(since)}").stdout
        lines = []
        for row in out.splitlines():
            ts, _, line = row.partition(" ")
            lines.append((_ns(ts), line))
        return lines

    def set_flag(self, flag: str, variant: str) -> None:
        """As ITBench injects a flagd fault: edit the flag file in the ConfigMap, restart flagd."""
        cm = json.loads(self.kubectl("get", "configmap", "flagd-config", "-o", "json").stdout)
        doc = json.loads(cm["data"]["demo.flagd.json"])
        doc["flags"][flag]["defaultVariant"] = variant
        patch = {"data": {"demo.flagd.json": json.dumps(doc, indent=2)}}
        self.kubectl("patch", "configmap", "flagd-config", "--type=merge", "-p", json.dumps(patch))
        # kubectl stamps restartedAt with the client's wall clock in whole seconds and refuses a
        # second restart within the same second; wait for the next one (real kubectl behaviour)
        stamp = time.time()
        time.sleep(max(0.0, 1.05 - (stamp - int(stamp))))
        self.kubectl("rollout", "restart", "deployment/flagd")

    # ---- Prometheus
    @property
    def prom(self) -> Any:
        from prometheus_api_client import PrometheusConnect

        return PrometheusConnect(url=self.prom_url, disable_ssl=True)

    def value(self, query: str, t: float) -> float:
        """A scalar from an instant query (0 when the vector is empty)."""
        res = self.prom.custom_query(query, params={"time": t})
        assert len(res) <= 1, res
        return float(res[0]["value"][1]) if res else 0.0

    def alerts(self, name: str, **labels: str) -> list[dict[str, Any]]:
        r = requests.get(self.prom_url + "/api/v1/alerts", timeout=30)
        r.raise_for_status()
        return [
            a
            for a in r.json()["data"]["alerts"]
            if a["labels"]["alertname"] == name and all(a["labels"].get(k) == v for k, v in labels.items())
        ]

    # ---- Loki
    def loki_lines(self, query: str, t0: float, t1: float) -> list[tuple[int, str]]:
        r = requests.get(
            self.loki + "/loki/api/v1/query_range",
            params={"query": query, "start": int(t0 * 1e9), "end": int(t1 * 1e9), "limit": 5000},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        data = r.json()["data"]
        assert data["resultType"] == "streams"
        return sorted((int(ts), line) for s in data["result"] for ts, line in s["values"])

    def loki_count(self, query: str, t: float) -> float:
        r = requests.get(
            self.loki + "/loki/api/v1/query", params={"query": query, "time": int(t * 1e9)}, timeout=30
        )
        assert r.status_code == 200, r.text
        res = r.json()["data"]["result"]
        return float(res[0]["value"][1]) if res else 0.0

    # ---- Jaeger
    def traces(self, service: str, t0: float, t1: float, **tags: str) -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "service": service,
            "start": int(t0 * 1e6),
            "end": int(t1 * 1e6),
            "limit": 50,
        }
        if tags:
            params["tags"] = json.dumps(tags)
        r = requests.get(self.jaeger + "/api/traces", params=params, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()["data"]  # type: ignore[no-any-return]


def _ns(ts: str) -> int:
    """RFC 3339 with nanoseconds → integer nanoseconds (no float rounding)."""
    base, _, frac = ts.rstrip("Z").partition(".")
    return int(parse_rfc3339(base + "Z")) * 1_000_000_000 + int((frac or "0").ljust(9, "0")[:9])


def spans_of(trace: dict[str, Any], service: str) -> list[dict[str, Any]]:
    procs = trace["processes"]
    return [s for s in trace["spans"] if procs[s["processID"]]["serviceName"] == service]


def tag(span: dict[str, Any], key: str) -> Any:
    return next((t["value"] for t in span["tags"] if t["key"] == key), None)


def process_tag(trace: dict[str, Any], span: dict[str, Any], key: str) -> Any:
    return next((t["value"] for t in trace["processes"][span["processID"]]["tags"] if t["key"] == key), None)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl not installed (CI installs /usr/bin/kubectl v1.32)")
    from itbench_agents.twin.instance import Twin

    twin = Twin.for_app("otel-demo", seed=7, clock=ManualClock(T0), history_s=600)
    ep = twin.serve(tmp_path)
    try:
        yield Served(twin, ep.kubeconfig, ep.kube_url, ep.prometheus_url, ep.loki_url, ep.jaeger_url)
    finally:
        twin.close()


def step_until(s: Served, alert: str, state: str, limit_s: float, **labels: str) -> float:
    """Advance one evaluation interval at a time until ``alert`` is in ``state``; returns the time."""
    t = s.now()
    deadline = t + limit_s
    while t <= deadline:
        if any(a["state"] == state for a in s.alerts(alert, **labels)):
            return t
        t = s.advance(STEP)
    raise AssertionError(f"{alert}{labels} not {state} within {limit_s} s: {s.alerts(alert)}")


PAY_ERR = f'sum(rate({ERRORS}{{service_name="payment", span_kind="SPAN_KIND_SERVER", status_code="STATUS_CODE_ERROR"}}[1m]))'
PAY_ALL = f'sum(rate({ERRORS}{{service_name="payment", span_kind="SPAN_KIND_SERVER"}}[1m]))'
PAY_LOGS = '{namespace="otel-demo", app="payment"}'
PAY_ERR_LOGS = PAY_LOGS + ' |= "Invalid token"'


# --------------------------------------------------------------------------- a flag fault
@pytest.mark.slow
def test_payment_failure_flag_is_consistent_across_kubectl_loki_jaeger_and_prometheus(served: Served) -> None:
    s = served
    (pod,) = s.pods("payment")
    pod_name = pod["metadata"]["name"]
    t_inject = s.now()

    # healthy: nothing anywhere
    assert s.value(PAY_ERR, t_inject) == 0
    assert s.value(PAY_ALL, t_inject) > 0.3, "payment serves checkouts"
    assert s.loki_lines(PAY_ERR_LOGS, t_inject - 300, t_inject) == []
    assert not [line for _, line in s.pod_logs(pod_name, t_inject - 300) if "Invalid token" in line]
    assert s.traces("payment", t_inject - 300, t_inject, error="true") == []
    assert s.alerts("HighRequestErrorRate") == []

    # the fault: paymentFailure=100% in the flag file, flagd restarted (as ITBench does)
    s.set_flag("paymentFailure", "100%")
    t_pending = step_until(s, "HighRequestErrorRate", "pending", 120, service_name="payment")
    (alert,) = s.alerts("HighRequestErrorRate", service_name="payment")
    active_at = parse_rfc3339(alert["activeAt"])
    assert t_inject < active_at <= t_pending
    t_firing = step_until(s, "HighRequestErrorRate", "firing", 120, service_name="payment")
    # for: 1m → fires one minute after it became active, at the next evaluation
    assert 60 <= t_firing - active_at <= 60 + STEP
    assert parse_rfc3339(s.alerts("HighRequestErrorRate", service_name="payment")[0]["activeAt"]) == active_at

    now = s.advance(30)
    t0 = now - 90  # the same window for every source

    # Prometheus: payment's server spans fail, all of them
    err, total = s.value(PAY_ERR, now), s.value(PAY_ALL, now)
    assert err > 0.3 and err == pytest.approx(total, rel=0.05)

    # Loki: error lines for payment in the window, the first one near the alert's start
    loki = s.loki_lines(PAY_LOGS, t0, now)
    errors = [(ts, line) for ts, line in loki if "Invalid token" in line]
    assert len(errors) >= 5
    assert s.loki_lines(PAY_ERR_LOGS, t0, now) == errors
    assert s.loki_count(f"sum(count_over_time({PAY_ERR_LOGS} [90s]))", now) == len(errors)
    first_error = s.loki_lines(PAY_ERR_LOGS, t_inject, now)[0][0] / 1e9
    assert t_inject < first_error and abs(first_error - active_at) <= 30

    # kubectl logs: the same pod, the same lines as Loki for the same window
    (pod_now,) = s.pods("payment")
    assert pod_now["metadata"]["name"] == pod_name, "a flag fault restarts nothing but flagd"
    kube = [(ts, line) for ts, line in s.pod_logs(pod_name, t0) if ts < now * 1e9]
    assert kube == [(ts, line) for ts, line in loki if ts >= t0 * 1e9]

    # Jaeger: error traces through payment, its Charge span failing with the logged message
    traces = s.traces("payment", t0, now, error="true")
    assert traces
    for tr in traces:
        (charge,) = [sp for sp in spans_of(tr, "payment") if sp["operationName"].endswith("/Charge")]
        assert tag(charge, "error") is True and tag(charge, "otel.status_code") == "ERROR"
        assert "Invalid token" in tag(charge, "otel.status_description")
        assert process_tag(tr, charge, "k8s.pod.name") == pod_name
        assert t0 * 1e6 <= min(sp["startTime"] for sp in tr["spans"]) <= now * 1e6
        # the caller's client span fails too, and the message is one payment actually logged
        callers = [sp for sp in spans_of(tr, "checkout") if sp["operationName"].endswith("/Charge")]
        assert callers and all(tag(sp, "error") is True for sp in callers)
    assert any(tag(charge, "otel.status_description") in line for _, line in errors)
    ok_traces = [t for t in s.traces("payment", t0, now) if t not in traces]
    for tr in ok_traces:  # anything not tagged error has no failing Charge
        assert not [sp for sp in spans_of(tr, "payment") if tag(sp, "error")]

    # the fix: flag off, flagd restarted; after the rate window everything goes quiet
    s.set_flag("paymentFailure", "off")
    t_fix = s.now()
    now = s.advance(180)
    assert s.alerts("HighRequestErrorRate", service_name="payment") == []
    t1 = t_fix + 60  # two minutes of quiet in every source
    assert s.value(PAY_ERR, now) == 0
    assert s.value(PAY_ALL, now) > 0.3
    assert s.loki_lines(PAY_ERR_LOGS, t1, now) == []
    assert not [line for _, line in s.pod_logs(pod_name, t1) if "Invalid token" in line]
    assert s.traces("payment", t1, now, error="true") == []
    last_error = s.loki_lines(PAY_ERR_LOGS, t_fix - 60, now)[-1][0] / 1e9
    # payment still serves and is traced: 2 % of its ~30 calls a minute are in a sampled trace, so
    # a two-minute window may hold none (about one draw in four); six minutes hold some, none failing
    later = s.advance(240)
    assert s.traces("payment", t1, later), "payment still serves (and is traced)"
    assert s.traces("payment", t1, later, error="true") == []
    assert last_error < t_fix + 30, "errors stop once flagd restarts"


# --------------------------------------------------------------------------- a pod fault
@pytest.mark.slow
def test_unpullable_image_is_consistent_between_kube_state_metrics_and_kubectl(served: Served) -> None:
    s = served
    (old,) = s.pods("payment")
    image = old["spec"]["containers"][0]["image"]
    t_inject = s.now()
    assert s.value(f'sum(kube_pod_status_phase{{namespace="{NS}", phase="Pending"}})', t_inject) == 0
    assert s.alerts("PendingPodsDetected") == []

    # the fault: a tag that does not exist, with Recreate so the old pod goes first
    patch = {
        "spec": {
            "strategy": {"type": "Recreate", "rollingUpdate": None},
            "template": {
                "spec": {
                    "containers": [{"name": "payment", "image": image.rsplit(":", 1)[0] + ":no-such-tag"}]
                }
            },
        }
    }
    s.kubectl("patch", "deployment", "payment", "--type=strategic", "-p", json.dumps(patch))
    t_firing = step_until(s, "PendingPodsDetected", "firing", 240, service_name="payment")
    (alert,) = s.alerts("PendingPodsDetected", service_name="payment")
    assert 120 <= t_firing - parse_rfc3339(alert["activeAt"]) <= 120 + STEP
    now = s.now()

    # kubectl and kube-state-metrics agree pod by pod
    (pod,) = s.pods("payment")
    name = pod["metadata"]["name"]
    assert name != old["metadata"]["name"]
    alert_pod = alert["labels"]["pod"]
    assert alert_pod == name
    (cs,) = pod["status"]["containerStatuses"]
    reason = cs["state"]["waiting"]["reason"]
    assert reason in ("ErrImagePull", "ImagePullBackOff")
    table = s.kubectl("get", "pod", name, "--no-headers").stdout.split()
    assert table[1:3] == ["0/1", reason]
    waiting = s.prom.custom_query(
        f'kube_pod_container_status_waiting_reason{{namespace="{NS}", pod=~"payment-.*"}} == 1',
        params={"time": now},
    )
    assert [(w["metric"]["pod"], w["metric"]["container"], w["metric"]["reason"]) for w in waiting] == [
        (name, "payment", reason)
    ]
    phase = s.prom.custom_query(f'kube_pod_status_phase{{pod="{name}"}} == 1', params={"time": now})
    assert [p["metric"]["phase"] for p in phase] == [pod["status"]["phase"]] == ["Pending"]
    assert s.value(f'kube_pod_status_ready{{pod="{name}", condition="true"}}', now) == 0
    gone = s.prom.custom_query(f'kube_pod_info{{pod="{old["metadata"]["name"]}"}}', params={"time": now})
    assert gone == [], "the deleted pod's series ended"
    dep = json.loads(s.kubectl("get", "deployment", "payment", "-o", "json").stdout)
    assert (
        s.value('kube_deployment_status_replicas_available{deployment="payment"}', now)
        == dep["status"].get("availableReplicas", 0)
        == 0
    )
    assert s.value('kube_deployment_spec_replicas{deployment="payment"}', now) == dep["spec"]["replicas"] == 1

    # kubectl logs has nothing to show, and neither has Loki; checkout's calls fail without a server span
    out = s.kubectl("logs", name, check=False)
    assert out.returncode != 0 and "is waiting to start" in out.stderr
    assert s.loki_lines(f'{{namespace="{NS}", pod="{name}"}}', t_inject, now) == []
    assert (
        s.value(f'sum(rate({ERRORS}{{service_name="checkout", status_code="STATUS_CODE_ERROR"}}[1m]))', now)
        > 0
    )
    assert (
        s.value(f'sum(rate({ERRORS}{{service_name="payment", span_kind="SPAN_KIND_SERVER"}}[1m]))', now) == 0
    )
    traces = s.traces("checkout", now - 60, now, error="true")
    assert traces
    for tr in traces:
        assert spans_of(tr, "payment") == []
        charges = [sp for sp in spans_of(tr, "checkout") if sp["operationName"].endswith("/Charge")]
        assert charges and all(tag(sp, "error") is True for sp in charges)

    # the fix: the right image again; a running pod, its series, its logs
    s.kubectl("set", "image", "deployment/payment", f"payment={image}")
    now = s.advance(240)
    (pod,) = s.pods("payment")
    name = pod["metadata"]["name"]
    assert s.kubectl("get", "pod", name, "--no-headers").stdout.split()[1:3] == ["1/1", "Running"]
    phase = s.prom.custom_query(f'kube_pod_status_phase{{pod="{name}"}} == 1', params={"time": now})
    assert [p["metric"]["phase"] for p in phase] == ["Running"]
    assert (
        s.prom.custom_query(
            f'kube_pod_container_status_waiting_reason{{namespace="{NS}"}}', params={"time": now}
        )
        == []
    )
    assert s.value('kube_deployment_status_replicas_available{deployment="payment"}', now) == 1
    assert s.alerts("PendingPodsDetected") == []
    started = parse_rfc3339(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
    kube = [(ts, line) for ts, line in s.pod_logs(name, started) if ts < now * 1e9]
    assert kube and kube == s.loki_lines(f'{{namespace="{NS}", pod="{name}"}}', started, now)
    assert (
        s.value(f'sum(rate({ERRORS}{{service_name="payment", span_kind="SPAN_KIND_SERVER"}}[1m]))', now) > 0.3
    )
    assert (
        s.value(f'sum(rate({ERRORS}{{service_name="checkout", status_code="STATUS_CODE_ERROR"}}[1m]))', now)
        == 0
    )
