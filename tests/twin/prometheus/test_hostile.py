"""Issue 11: hostile PromQL requests are answered within their budget with Prometheus' own status
codes, and the Kubernetes API keeps answering (a canary GET) while they run."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itbench_agents.core.endpoints import kubeconfig_token
from itbench_agents.twin.prometheus.hostile import Case, cases, nested
from itbench_agents.twin.serve import running_twin

CANARY_LIMIT_S = 0.200
SLACK_S = 1.0  # each request: its budget + 1 s


@pytest.fixture(scope="module")
def twin() -> Iterator[Any]:
    with running_twin(app="otel-demo", seed=1) as tw:
        warm_up(tw.endpoints.prometheus_url.rstrip("/"))
        yield tw


def warm_up(prom: str) -> None:
    """What an episode has done before an agent gets the endpoints (the harness waits for the
    alerts): every metric family's series built once and the alert rules evaluated. The first
    read of a family after a health change builds its series under the twin's lock (~0.1 s for
    the span metrics); the canary measures the steady state, not that one-off."""
    requests.get(prom + "/api/v1/query", params={"query": 'count({__name__=~".+"})'}, timeout=60)
    requests.get(prom + "/api/v1/alerts", timeout=60)


def _send(prom: str, case: Case) -> tuple[int, float, dict[str, Any] | None]:
    t0 = time.monotonic()
    if case.body is not None:
        r = requests.post(
            prom + case.path,
            data=case.body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            timeout=60,
        )
    elif case.method == "POST":
        r = requests.post(prom + case.path, data=case.params, timeout=60)
    else:
        r = requests.get(prom + case.path, params=case.params, timeout=60)
    dt = time.monotonic() - t0
    try:
        body = r.json()
    except ValueError:
        body = None
    return r.status_code, dt, body


class Canary:
    """GET /api/v1/namespaces on the kube port in a loop; records every latency."""

    def __init__(self, kube_url: str, token: str | None) -> None:
        self.url = kube_url.rstrip("/") + "/api/v1/namespaces"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        s = requests.Session()
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                r = s.get(self.url, headers=self.headers, timeout=30)
                if r.status_code != 200:
                    self.errors.append(f"status {r.status_code}")
            except requests.RequestException as exc:
                self.errors.append(repr(exc))
            self.latencies.append(time.monotonic() - t0)
            time.sleep(0.01)

    def __enter__(self) -> Canary:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def _storm(twin: Any) -> tuple[list[str], list[float]]:
    """Fire every hostile case at once with the canary running; (timing problems, canary latencies).
    Status codes and error types are asserted here, on every attempt."""
    ep = twin.endpoints
    prom = ep.prometheus_url.rstrip("/")
    token = kubeconfig_token(ep.kubeconfig)
    all_cases = cases(float(twin.now()))
    results: dict[str, tuple[int, float, dict[str, Any] | None]] = {}

    def fire(case: Case) -> None:
        results[case.name] = _send(prom, case)

    with Canary(ep.kube_url, token) as canary:
        time.sleep(0.3)  # a few canary requests before the storm
        threads = [threading.Thread(target=fire, args=(c,)) for c in all_cases]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=120)
        time.sleep(0.2)

    problems = []
    for c in all_cases:
        assert c.name in results, f"{c.name}: no answer"
        status, dt, body = results[c.name]
        assert status in c.statuses, f"{c.name}: status {status} not in {c.statuses}: {str(body)[:200]}"
        if status >= 400:
            assert body is not None and body.get("status") == "error", c.name
            expected_type = {400: "bad_data", 422: "execution", 503: "timeout"}[status]
            assert body["errorType"] == expected_type, (c.name, body)
        if dt > c.budget_s + SLACK_S:
            problems.append(f"{c.name}: answered after {dt:.2f} s, budget {c.budget_s} s + {SLACK_S} s")
    assert not canary.errors, canary.errors[:5]
    assert len(canary.latencies) >= 5
    worst = max(canary.latencies)
    if worst >= CANARY_LIMIT_S:
        problems.append(
            f"kube API canary took {worst * 1000:.0f} ms (median "
            f"{statistics.median(canary.latencies) * 1000:.1f} ms over {len(canary.latencies)} requests)"
        )
    return problems, canary.latencies


@pytest.mark.slow
def test_hostile_queries_answer_in_budget_and_kube_api_stays_responsive(twin: Any) -> None:
    """All worst cases at once: Prometheus' status codes every time; each answer within its budget
    + 1 s and every canary GET under 200 ms in at least one of 3 attempts. (A shared 2-core machine
    alone shows canary stalls near 200 ms now and then, with no query running; the regressions this
    guards against, the twin's lock held through an evaluation, stall the canary for seconds in
    every attempt.)"""
    attempts = []
    for _ in range(3):
        problems, _lat = _storm(twin)
        if not problems:
            return
        attempts.append(problems)
    raise AssertionError("\n".join(f"attempt {i + 1}: {'; '.join(p)}" for i, p in enumerate(attempts)))


def test_timeout_message_and_status(twin: Any) -> None:
    """A query over its ``timeout`` gets Prometheus' 503 ``timeout`` error, within the budget + 1 s."""
    prom = twin.endpoints.prometheus_url.rstrip("/")
    q = nested(5, "up")  # ~2 s of work on this machine
    t0 = time.monotonic()
    r = requests.get(prom + "/api/v1/query", params={"query": q, "timeout": "300ms"}, timeout=60)
    dt = time.monotonic() - t0
    assert r.status_code == 503, r.text[:300]
    assert r.json() == {
        "status": "error",
        "errorType": "timeout",
        "error": "query timed out in expression evaluation",
    }
    assert dt < 0.3 + SLACK_S


def test_series_without_start_covers_all_history(twin: Any) -> None:
    prom = twin.endpoints.prometheus_url.rstrip("/")
    a = requests.get(prom + "/api/v1/series", params={"match[]": "up"}, timeout=30)
    b = requests.get(prom + "/api/v1/series", params={"match[]": "up", "start": "0"}, timeout=30)
    assert a.status_code == b.status_code == 200
    assert a.json()["data"] and a.json() == b.json()


_ALPHABET = st.sampled_from(
    list("()[]{}+-*/%^=!~<>,:@\"' ")
    + ["up", "rate", "sum", "by", "or", "and", "offset", "5m", "1h:1s", "1", "1e308", "NaN", "__name__", ".+"]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_ALPHABET, max_size=40))
def test_fuzz_query_endpoint_no_5xx_and_bounded(twin: Any, parts: list[str]) -> None:
    """Random token soup on /api/v1/query: never a 500, never over the 1 s timeout + 1 s."""
    prom = twin.endpoints.prometheus_url.rstrip("/")
    q = "".join(parts)
    t0 = time.monotonic()
    r = requests.get(prom + "/api/v1/query", params={"query": q, "timeout": "1s"}, timeout=60)
    dt = time.monotonic() - t0
    assert r.status_code in (200, 400, 422, 503), (q, r.status_code, r.text[:300])
    body = r.json()
    if r.status_code == 503:
        assert body["errorType"] == "timeout", (q, body)
    assert dt < 2.0, (q, dt)


def test_a_heavy_logql_query_leaves_the_kube_api_responsive(twin: Any) -> None:
    """Loki evaluates without the twin's lock too (log reads take it a minute of logs at a time)."""
    ep = twin.endpoints
    loki = ep.loki_url.rstrip("/")
    now = float(twin.now())
    q = 'sum by (pod) (count_over_time({namespace=~".+"} |~ "(?i)(error|fail|timeout).*" [1h]))'
    params = {"query": q, "start": str(int((now - 3600) * 1e9)), "end": str(int(now * 1e9)), "step": "15"}
    worst = []
    for _ in range(3):
        with Canary(ep.kube_url, kubeconfig_token(ep.kubeconfig)) as canary:
            time.sleep(0.1)
            r = requests.get(loki + "/loki/api/v1/query_range", params=params, timeout=60)
            time.sleep(0.1)
        assert r.status_code == 200, r.text[:300]
        assert not canary.errors
        worst.append(max(canary.latencies))
        if worst[-1] < CANARY_LIMIT_S:
            return
    raise AssertionError(
        f"kube API canary worst latencies per attempt: {[round(w * 1000) for w in worst]} ms"
    )


def test_loki_chunked_log_reads_equal_one_read() -> None:
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.instance import Twin
    from itbench_agents.twin.loki.server import _LockedLogs
    from itbench_agents.twin.telemetry.sources import Matcher

    tw = Twin.for_app("otel-demo", seed=2, clock=ManualClock(), history_s=1800)
    now_ns = int(tw.now() * 1e9)
    ms = [Matcher("namespace", "=~", ".+")]
    for start in (now_ns - 1800 * 10**9, now_ns - 1234 * 10**9 - 7):
        one = tw.logs.streams(ms, start, now_ns)
        chunked = _LockedLogs(tw.logs, tw.lock).streams(ms, start, now_ns)
        as_dict = {tuple(sorted(s.labels.items())): s.entries for s in chunked}
        assert {tuple(sorted(s.labels.items())): s.entries for s in one if s.entries} == {
            k: v for k, v in as_dict.items() if v
        }
