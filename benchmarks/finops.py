"""OpenCost API benchmarks (issue 16): prints numbers, asserts nothing.

1. ``/allocation/compute`` for 7 days at a 1 h step over the whole Astronomy Shop (168 sets), by
   namespace with idle, and per container: the first call (container models built) and the median
   of warm calls, after the twin's one-off indexing of its store log (timed on its own: the first
   query of any kind pays it, PromQL included). Target < 200 ms. Timed is the server's answer (the
   response body); a client's parsing of the per-container answer (megabytes) is printed apart.
2. ``/assets`` over the same 7 days.
3. Baseline in the same process: the twin's PromQL engine answering
   ``sum(rate(container_cpu_usage_seconds_total[1h]))`` over the same 7 days at a 1 h step — the query
   a FinOps agent would otherwise use to compute usage itself.
4. The cost rules' week-long subquery (``CPUSpend``'s expression, one instant evaluation from a cold
   cache) as rule evaluation runs it — fetching only the lookback windows of its hourly steps — and
   as an engine without a subquery cache runs it (every 15-second scrape of the week), with the
   ratio and whether the answers agree.

    uv run python benchmarks/finops.py              # 7 days of history (about 2 s to build)
    uv run python benchmarks/finops.py --days 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from itbench_agents.twin.httpserver import Request
from itbench_agents.twin.instance import Twin


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return first, statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    twin = Twin.for_app("otel-demo", history_s=args.days * 86400 + 3600, addons=["opencost"])
    print(
        f"otel-demo twin with {args.days} d of history and OpenCost: built in {time.perf_counter() - t0:.1f} s"
    )
    api = twin.addons["opencost"].make_handler(twin)
    window = f"{args.days}d"
    t0 = time.perf_counter()
    twin.addons["opencost"].cost_model()._history().refresh()
    print(
        f"  {'index the store log (once, shared with PromQL)':<42} {(time.perf_counter() - t0) * 1000:7.1f} ms"
    )

    def get(path: str, **params: str) -> bytes:
        """The server's answer (the response body as sent), not the client's parsing of it."""
        r = api(Request("GET", path, {k: [v] for k, v in params.items()}, {}))
        assert r.status == 200, r.body
        return r.body  # type: ignore[no-any-return]

    cases = {
        "allocation 1h step, by namespace, idle": lambda: get(
            "/allocation/compute", window=window, step="1h", aggregate="namespace", includeIdle="true"
        ),
        "allocation 1h step, per container": lambda: get("/allocation/compute", window=window, step="1h"),
        "allocation accumulated, by deployment": lambda: get(
            "/allocation/compute", window=window, aggregate="deployment", accumulate="true"
        ),
        "assets": lambda: get("/assets", window=window),
    }
    for name, fn in cases.items():
        first, warm = timed(fn, args.repeat)
        print(f"  {name:<42} first {first * 1000:7.1f} ms   warm median {warm * 1000:7.1f} ms")
    body = cases["allocation 1h step, per container"]()
    first, warm = timed(lambda: json.loads(body), args.repeat)
    print(
        f"  {'client side: json.loads of that (%.1f MB)' % (len(body) / 1e6):<42} "
        f"first {first * 1000:7.1f} ms   warm median {warm * 1000:7.1f} ms"
    )
    from itbench_agents.twin.prometheus.server import make_prometheus_handler

    prom = make_prometheus_handler(twin)
    end = twin.now()
    q = {
        "query": ["sum(rate(container_cpu_usage_seconds_total[1h]))"],
        "start": [str(end - args.days * 86400)],
        "end": [str(end)],
        "step": ["3600"],
    }
    first, warm = timed(lambda: prom(Request("GET", "/api/v1/query_range", q, {})), args.repeat)
    print(
        f"  {'baseline: PromQL cpu usage, 1h step':<42} first {first * 1000:7.1f} ms   warm median {warm * 1000:7.1f} ms"
    )
    cost_rule(twin, args.repeat)


def cost_rule(twin: Twin, repeat: int) -> None:
    from itbench_agents.personas.finops.alerts import rule_file
    from itbench_agents.twin.prometheus.alerts import load_rule_file
    from itbench_agents.twin.prometheus.engine import Engine
    from itbench_agents.twin.prometheus.subquery_cache import SubqueryCache

    (group,) = load_rule_file(rule_file())
    expr = next(r.expr for r in group.rules if r.alert == "CPUSpend")
    at = int(twin.now() * 1000)
    answers = {}

    def run(cached: bool) -> None:
        engine = Engine(twin.metrics, subquery_cache=SubqueryCache() if cached else None)
        answers[cached] = engine.instant(expr, at).vector

    _, sparse = timed(lambda: run(True), repeat)
    _, full = timed(lambda: run(False), repeat)
    print(
        f"  {'CPUSpend from a cold cache, sparse fetch':<42} median {sparse * 1000:7.1f} ms   "
        f"without a cache (whole week) {full * 1000:7.1f} ms   ratio {full / sparse:4.1f}x   "
        f"same answer: {'yes' if answers[True] == answers[False] else 'NO'}"
    )


if __name__ == "__main__":
    main()
