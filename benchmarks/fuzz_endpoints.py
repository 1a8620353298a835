"""Randomly malformed requests against every endpoint of a served twin (prints numbers; exits 1 on a
violation).

    uv run python benchmarks/fuzz_endpoints.py [--n 2000] [--seed 0] [--app otel-demo]

Each request picks an endpoint (Kubernetes API, Prometheus, Loki, Jaeger), a real route or a
mangled one, a method, and query parameters or a body drawn from values that servers get wrong:
empty, huge, negative, NaN, far-past and far-future times, unbalanced brackets, bad regexes, bad
durations, binary junk. A violation is a 5xx answer, an answer after more than ``--limit`` seconds
(5 s), or a dropped connection. Prints the counts, the status-code mix per endpoint, the latency
median / p99 / max, and every violation with the request that caused it.
"""

from __future__ import annotations

import argparse
import collections
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

ROUTES = {
    "kube": [
        "/api/v1/pods",
        "/api/v1/namespaces/otel-demo/pods",
        "/apis/apps/v1/namespaces/otel-demo/deployments",
        "/apis/apps/v1/namespaces/otel-demo/deployments/frontend",
        "/api/v1/namespaces/otel-demo/pods/x/log",
        "/api/v1/namespaces/otel-demo/configmaps",
        "/apis/apps/v1/deployments",
        "/api/v1/nodes",
        "/api/v1/events",
        "/openapi/v2",
        "/apis",
        "/version",
    ],
    "prometheus": [
        "/api/v1/query",
        "/api/v1/query_range",
        "/api/v1/series",
        "/api/v1/labels",
        "/api/v1/label/__name__/values",
        "/api/v1/alerts",
        "/api/v1/rules",
        "/api/v1/targets",
        "/api/v1/format_query",
        "/federate",
    ],
    "loki": [
        "/loki/api/v1/query",
        "/loki/api/v1/query_range",
        "/loki/api/v1/labels",
        "/loki/api/v1/label/app/values",
        "/loki/api/v1/series",
        "/loki/api/v1/index/stats",
    ],
    "jaeger": [
        "/api/services",
        "/api/operations",
        "/api/traces",
        "/api/traces/0af7651916cd43dd8448eb211c80319c",
    ],
}
PARAMS = {
    "kube": [
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "watch",
        "timeoutSeconds",
        "tailLines",
        "container",
    ],
    "prometheus": ["query", "time", "start", "end", "step", "timeout", "match[]", "limit"],
    "loki": ["query", "time", "start", "end", "step", "limit", "direction", "since", "interval"],
    "jaeger": [
        "service",
        "operation",
        "tags",
        "start",
        "end",
        "limit",
        "lookback",
        "minDuration",
        "maxDuration",
    ],
}
VALUES = [
    "",
    "0",
    "-1",
    "1e400",
    "NaN",
    "-Inf",
    "9" * 30,
    "1y",
    "0s",
    "-5m",
    "1ms",
    "2020-13-45T25:61:61Z",
    "99999999999999999999999",
    "{",
    "}",
    "(((((((",
    '{app=~".+"}',
    '{app=~"("}',
    '{a="b"} |= "error"',
    'count_over_time({a="b"}[1y])',
    'sum(rate({namespace=~".+"}[5m])) by (app)',
    "rate(http_requests_total[5m]",
    "up[1y:1ms]",
    "sum by (le) (rate(x[5m]))",
    "=~.*",
    "a" * 5000,
    "\x00\xff\xfe",
    "%zz",
    "true",
    "forward",
    "null",
    '{"a": [1, 2',
]
METHODS = ["GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
BODY_TYPES = [
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/x-www-form-urlencoded",
    "text/plain",
]


def random_request(rng: random.Random, urls: dict[str, str]) -> tuple[str, str, str, dict[str, Any]]:
    ep = rng.choice(sorted(urls))
    path = rng.choice(ROUTES[ep])
    if rng.random() < 0.1:  # a mangled route
        path = path + rng.choice(["/", "//x", "/..", "/%00", "?", "/" + "y" * 300])
    method = rng.choice(METHODS)
    params = {rng.choice(PARAMS[ep]): rng.choice(VALUES) for _ in range(rng.randint(0, 4))}
    kwargs: dict[str, Any] = {"params": params}
    if method in ("POST", "PUT", "PATCH") and rng.random() < 0.8:
        body = rng.choice(VALUES + ["{}", "[]", '{"kind": "Pod"}', '[{"op": "remove", "path": "/x"}]'])
        kwargs["data"] = body.encode("utf-8", "surrogatepass")
        kwargs["headers"] = {"Content-Type": rng.choice(BODY_TYPES)}
    return ep, method, urls[ep] + path, kwargs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--app", default="otel-demo")
    ap.add_argument("--limit", type=float, default=5.0, help="seconds an answer may take")
    args = ap.parse_args()

    from itbench_agents.twin.instance import Twin

    t0 = time.perf_counter()
    twin = Twin.for_app(args.app, seed=args.seed, history_s=600)
    work = Path(tempfile.mkdtemp(prefix="itbench-fuzz-"))
    ep = twin.serve(work)
    print(f"twin {args.app} up and served in {time.perf_counter() - t0:.1f} s")
    urls = {
        "kube": ep.kube_url,
        "prometheus": ep.prometheus_url,
        "loki": ep.loki_url,
        "jaeger": ep.jaeger_url,
    }
    urls = {k: v for k, v in urls.items() if v}
    rng = random.Random(args.seed)
    session = requests.Session()
    session.verify = False
    kube_headers = {"Authorization": f"Bearer {twin.admin_token}"}
    codes: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    lat: list[float] = []
    violations: list[str] = []
    try:
        for _ in range(args.n):
            name, method, url, kwargs = random_request(rng, urls)
            if name == "kube":
                kwargs["headers"] = {**kwargs.get("headers", {}), **kube_headers}
            start = time.perf_counter()
            try:
                r = session.request(method, url, timeout=args.limit + 5, **kwargs)
                r.content  # noqa: B018 - the whole answer, so a reply cut short shows
                status = r.status_code
            except requests.RequestException as e:
                violations.append(f"dropped: {method} {url} {kwargs.get('params')}: {type(e).__name__}: {e}")
                session = requests.Session()
                session.verify = False
                continue
            dt = time.perf_counter() - start
            lat.append(dt)
            codes[name][status] += 1
            if status >= 500:
                violations.append(f"{status}: {method} {url} {kwargs.get('params')} {r.text[:200]!r}")
            if dt > args.limit:
                violations.append(f"slow ({dt:.2f} s): {method} {url} {kwargs.get('params')}")
    finally:
        twin.close()
    for name in sorted(codes):
        mix = ", ".join(f"{c}: {n}" for c, n in sorted(codes[name].items()))
        print(f"{name:<11} {sum(codes[name].values()):5d} requests   {mix}")
    if lat:
        q = statistics.quantiles(lat, n=100) if len(lat) > 1 else [lat[0]] * 99
        print(
            f"latency     median {statistics.median(lat) * 1000:.1f} ms   p99 {q[98] * 1000:.1f} ms   "
            f"max {max(lat) * 1000:.1f} ms"
        )
    print(f"violations  {len(violations)} of {args.n} requests (5xx, over {args.limit} s, dropped)")
    for v in violations[:50]:
        print("  " + v)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
