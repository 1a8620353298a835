"""The worst-case Prometheus requests of issue 11, shared by ``tests/twin/prometheus/test_hostile.py`` and
``benchmarks/kube_api.py``: each must be answered within its budget (the query ``timeout`` for
evaluations, about nothing for rejections) while the Kubernetes API keeps answering.

Each case is (name, method, path, form parameters or raw body, budget in seconds, accepted statuses).
Accepted statuses are what Prometheus itself would answer: 200, 400 ``bad_data``, 422 ``execution``
(too many samples) or 503 ``timeout``.
"""

from __future__ import annotations

from dataclasses import dataclass

TIMEOUT_S = 2.0


def nested(depth: int, inner: str, fn: str = "max_over_time", window: str = "[1h:1s]") -> str:
    q = inner
    for _ in range(depth):
        q = f"{fn}({q}{window})"
    return q


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    params: dict[str, str]
    budget_s: float
    statuses: tuple[int, ...]
    body: bytes | None = None  # raw form body (POST), instead of params


def cases(now_s: float) -> list[Case]:
    t = f"{TIMEOUT_S:g}s"
    start, end = f"{now_s - 3600:.3f}", f"{now_s:.3f}"
    big_form = b"query=" + b"up%20or%20" * (15 * 1024 * 1024 // 10) + b"up"
    return [
        Case("open parens x5000", "GET", "/api/v1/query", {"query": "(" * 5000}, 0.5, (400,)),
        Case(
            "closed parens x5000",
            "GET",
            "/api/v1/query",
            {"query": "(" * 5000 + "up" + ")" * 5000},
            0.5,
            (400,),
        ),
        Case("up or up x4000", "POST", "/api/v1/query", {"query": " or ".join(["up"] * 4000)}, 0.5, (400,)),
        Case("15 MB form POST", "POST", "/api/v1/query", {}, 2.0, (400,), body=big_form),
        Case(
            "3-deep [1h:1s] subquery",
            "GET",
            "/api/v1/query",
            {"query": nested(3, "rate(up[5m])"), "timeout": t},
            TIMEOUT_S,
            (200, 503),
        ),
        Case(
            "5-deep [1h:1s] subquery",
            "GET",
            "/api/v1/query",
            {"query": nested(5, "up"), "timeout": t},
            TIMEOUT_S,
            (200, 422, 503),
        ),
        Case(
            "8-deep [2h:1s] subquery of all counters",
            "GET",
            "/api/v1/query",
            {"query": nested(8, 'rate({__name__=~".+_total"}[5m])', window="[2h:1s]"), "timeout": t},
            TIMEOUT_S,
            (422, 503),
        ),
        Case(
            'query_range {__name__=~".+"} 1h at 1s',
            "GET",
            "/api/v1/query_range",
            {"query": '{__name__=~".+"}', "start": start, "end": end, "step": "1", "timeout": t},
            TIMEOUT_S,
            (422, 503),
        ),
        Case(
            "query_range 4.4M points (all buckets, 1 h at 2 s)",
            "GET",
            "/api/v1/query_range",
            {
                "query": "traces_span_metrics_duration_milliseconds_bucket",
                "start": start,
                "end": end,
                "step": "2",
                "timeout": t,
            },
            TIMEOUT_S,
            (200, 422, 503),
        ),
        Case(
            "query_range 12,000 points",
            "GET",
            "/api/v1/query_range",
            {"query": "up", "start": f"{now_s - 12000:.3f}", "end": end, "step": "1"},
            0.5,
            (400,),
        ),
        Case("series match[]=up without start", "GET", "/api/v1/series", {"match[]": "up"}, 1.0, (200,)),
        Case(
            "series match[]=up start=0", "GET", "/api/v1/series", {"match[]": "up", "start": "0"}, 1.0, (200,)
        ),
    ]
