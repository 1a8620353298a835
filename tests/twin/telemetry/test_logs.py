"""Container logs: symptoms show up, volumes follow health, kubectl-logs rules and Loki streams."""

from __future__ import annotations

import json

import pytest
from telemetry_fixtures import (
    NS,
    PODS,
    T0,
    build_shop,
    chain_health,
    make_pod,
    running_status,
    terminated,
    update,
    waiting_status,
)

from itbench_agents.twin.health import Symptom
from itbench_agents.twin.telemetry.sources import Matcher

PAY = "payment-7d4b9c6f5-abcde"
CHECKOUT = "checkout-7d4b9c6f5-abcde"
INVALID = Symptom(
    "feature_flag_failure", "Payment request failed. Invalid token. app.loyalty.level=gold", ratio=1.0
)
REFUSED = Symptom(
    "connection_refused",
    'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 10.96.12.7:8080: connect: connection refused"',
    target="payment",
)


def ns(t: float) -> int:
    return int(t * 1e9)


def entries(twin, pod: str, t0: float, t1: float) -> list[tuple[int, str]]:
    streams = twin.logs.streams([Matcher("pod", "=", pod)], ns(t0), ns(t1))
    return [e for s in streams for e in s.entries]


def test_healthy_service_logs_requests_without_errors(shop):
    lines = entries(shop, PAY, shop.now() - 600, shop.now())
    assert len(lines) > 60  # ~1 line per 20 requests at 10 req/s, capped per bucket
    recs = [json.loads(line) for _, line in lines]  # payment is Node.js: pino JSON
    assert all(r["level"] == 30 for r in recs)
    assert all(r["hostname"] == PAY for r in recs)
    assert [t for t, _ in lines] == sorted(t for t, _ in lines)


def test_errors_in_logs_follow_the_error_ratio_and_carry_the_symptom():
    twin = build_shop(history_s=600)
    t_fault = twin.now()
    twin.health.append(chain_health(t_fault, payment_err=0.5, payment_syms=(INVALID,)))
    twin.advance(600)
    t_fix = twin.now()
    twin.health.append(chain_health(t_fix))
    twin.advance(600)
    before = [line for _, line in entries(twin, PAY, t_fault - 600, t_fault)]
    during = [line for _, line in entries(twin, PAY, t_fault, t_fix)]
    after = [line for _, line in entries(twin, PAY, t_fix + 1, twin.now())]
    assert not any("Invalid token" in line for line in before + after)
    errors = [line for line in during if "Invalid token" in line]
    # 5 errors/s → an error line per 2 errors, capped at 6 per 10 s bucket → ~360 in 10 min
    assert 300 <= len(errors) <= 361
    # the caller logs the failing call too (checkout is Go: logfmt-like text)
    checkout = [line for _, line in entries(twin, CHECKOUT, t_fault, t_fix)]
    assert any("level=ERROR" in line for line in checkout)


def test_logs_and_metrics_agree_at_the_same_moment():
    from itbench_agents.twin.telemetry.sources import Matcher as M

    twin = build_shop(history_s=600)
    twin.health.append(chain_health(twin.now(), payment_err=0.2, edge_syms=(REFUSED,)))
    twin.advance(300)
    t = twin.now()
    err_series = twin.metrics.select(
        [
            M("__name__", "=", "traces_span_metrics_calls_total"),
            M("service_name", "=", "checkout"),
            M("status_code", "=", "STATUS_CODE_ERROR"),
        ],
        int((t - 120) * 1000),
        int(t * 1000),
    )
    assert err_series  # metrics say checkout has errors now
    recent = [line for _, line in entries(twin, CHECKOUT, t - 120, t)]
    assert any("connection refused" in line for line in recent)  # and the logs say why


def test_loki_streams_labels_and_selectors(shop):
    streams = shop.logs.streams(
        [Matcher("namespace", "=", NS), Matcher("app", "=~", "pay.*")], ns(T0), ns(shop.now())
    )
    assert len(streams) == 1
    assert streams[0].labels == {
        "namespace": NS,
        "pod": PAY,
        "container": "payment",
        "app": "payment",
        "service_name": "payment",
        "job": f"{NS}/payment",
    }
    assert shop.logs.label_names(ns(T0), ns(shop.now())) == [
        "app",
        "container",
        "job",
        "namespace",
        "pod",
        "service_name",
    ]
    assert shop.logs.label_values("app", ns(T0), ns(shop.now())) == ["checkout", "frontend", "payment"]
    # entries lie in [start, end)
    t0, t1 = shop.now() - 100, shop.now() - 50
    for s in shop.logs.streams([Matcher("app", "=", "frontend")], ns(t0), ns(t1)):
        assert all(ns(t0) <= t < ns(t1) for t, _ in s.entries)


def test_pod_log_tail_since_timestamps(shop):
    out = shop.logs.pod_log(NS, PAY, "payment", tail_lines=3, timestamps=True)
    lines = out.splitlines()
    assert len(lines) == 3
    assert all(line[:4] == "2026" and line[29:31] == "Z " for line in lines)
    since = shop.now() - 30
    recent = shop.logs.pod_log(NS, PAY, "payment", since_time=since)
    assert 0 < len(recent.splitlines()) < 30
    first_start = shop.logs.pod_log(NS, PAY, "payment").splitlines()[0]
    assert "started" in first_start  # the instance's start-up line comes first


def _crashloop(twin):
    pod = make_pod("cart-5f6d7c8b9-xyzab", "cart")
    twin.store.create(PODS, pod)
    twin.advance(5)
    s1 = twin.now()
    update(twin, PODS, running_status(pod, s1))
    twin.advance(60)
    last = terminated(s1, twin.now(), "Error", 1, "VALKEY_ADDR environment variable is required.")
    update(twin, PODS, waiting_status(pod, "CrashLoopBackOff", 1, last))
    twin.advance(20)
    s2 = twin.now()
    update(twin, PODS, running_status(pod, s2, restarts=1, last=last))
    twin.advance(60)
    return pod, s1, s2


def test_pod_log_current_and_previous_instances():
    twin = build_shop(history_s=60)
    pod, s1, s2 = _crashloop(twin)
    name = pod["metadata"]["name"]
    prev = twin.logs.pod_log(NS, name, "cart", previous=True, timestamps=True)
    cur = twin.logs.pod_log(NS, name, "cart", timestamps=True)
    assert "VALKEY_ADDR environment variable is required." in prev  # last words of the crashed run
    assert "VALKEY_ADDR" not in cur
    assert prev.splitlines()[0] < cur.splitlines()[0]
    # .NET console logger format
    assert "info: cart[0]" in cur


def test_pod_log_errors_use_kubelet_wording():
    twin = build_shop(history_s=60)
    with pytest.raises(
        LookupError,
        match=r'previous terminated container "payment" in pod "payment-7d4b9c6f5-abcde" not found',
    ):
        twin.logs.pod_log(NS, PAY, "payment", previous=True)
    with pytest.raises(LookupError, match="container nope is not valid for pod payment-7d4b9c6f5-abcde"):
        twin.logs.pod_log(NS, PAY, "nope")
    with pytest.raises(LookupError, match='pods "ghost" not found'):
        twin.logs.pod_log(NS, "ghost", "x")
    pod = make_pod("ad-5f6d7c8b9-xyzab", "ad")
    twin.store.create(PODS, pod)
    update(twin, PODS, waiting_status(pod, "ImagePullBackOff", 0, None))
    with pytest.raises(
        LookupError,
        match='container "ad" in pod "ad-5f6d7c8b9-xyzab" is waiting to start: trying and failing to pull image',
    ):
        twin.logs.pod_log(NS, "ad-5f6d7c8b9-xyzab", "ad")
    # a container name is optional for single-container pods
    assert twin.logs.pod_log(NS, PAY, "")


def test_infrastructure_logs_in_their_own_style():
    from telemetry_fixtures import FakeTwin, node_obj
    from telemetry_fixtures import op as make_op

    from itbench_agents.k8s.kinds import GroupResource
    from itbench_agents.twin.health import AppHealth, ServiceHealth
    from itbench_agents.twin.telemetry.hub import install_telemetry

    twin = FakeTwin()
    twin.store.create(GroupResource("", "nodes"), node_obj("node-1"))
    pods = {s: make_pod(f"{s}-7d4b9c6f5-abcde", s) for s in ("frontend-proxy", "postgresql")}
    for p in pods.values():
        twin.store.create(PODS, p)
    twin.advance(1)
    for p in pods.values():
        update(twin, PODS, running_status(p, twin.now()))
    twin.health.append(
        AppHealth(
            twin.now(),
            {
                "frontend-proxy": ServiceHealth(
                    "frontend-proxy",
                    1,
                    1,
                    (make_op("frontend-proxy", "GET /api/products/{productId}", 20.0),),
                ),
                "postgresql": ServiceHealth("postgresql", 1, 1, (make_op("postgresql", "SELECT", 20.0),)),
            },
            (),
            NS,
        )
    )
    install_telemetry(twin)
    twin.advance(600)
    proxy = [
        line for _, line in entries(twin, "frontend-proxy-7d4b9c6f5-abcde", twin.now() - 300, twin.now())
    ]
    assert proxy and all('"GET /api/products/' in line and ' HTTP/1.1" 200 ' in line for line in proxy)
    assert not any("{productId}" in line for line in proxy)  # concrete ids, as a real access log
    pg = [line for _, line in entries(twin, "postgresql-7d4b9c6f5-abcde", twin.now() - 300, twin.now())]
    assert pg and all(" UTC [1] LOG:  checkpoint" in line for line in pg)
    assert len(pg) < len(proxy) / 5  # a database does not log every statement
