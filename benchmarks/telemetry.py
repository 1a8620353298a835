"""Telemetry speed on a real twin: ``uv run python benchmarks/telemetry.py [APP] [HISTORY_S]``.

Prints, for typical selectors over the whole history window at the 15 s scrape grid, the series
count and the median CPU time (``time.process_time``, robust on a shared machine) of warm
queries, plus the cold time after a health change; then logs and traces figures.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

SELECTORS: dict[str, list[tuple[str, str, str]]] = {
    "calls (all)": [("__name__", "=", "traces_span_metrics_calls_total")],
    "calls errors": [
        ("__name__", "=", "traces_span_metrics_calls_total"),
        ("status_code", "=", "STATUS_CODE_ERROR"),
    ],
    "duration buckets (all)": [("__name__", "=", "traces_span_metrics_duration_milliseconds_bucket")],
    "duration buckets frontend": [
        ("__name__", "=", "traces_span_metrics_duration_milliseconds_bucket"),
        ("service_name", "=~", "frontend|frontend-proxy"),
    ],
    "pod phase": [("__name__", "=", "kube_pod_status_phase")],
    "restarts": [("__name__", "=", "kube_pod_container_status_restarts_total")],
    "container cpu": [("__name__", "=", "container_cpu_usage_seconds_total")],
    "kube_.+": [("__name__", "=~", "kube_.+")],
    "every series": [("__name__", "=~", ".+")],
}


def _cpu_ms(fn: Callable[[], Any], repeat: int = 5) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        times.append((time.process_time() - t) * 1000)
    return statistics.median(times), out


def main(app: str = "otel-demo", history_s: float = 3600.0) -> None:
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.instance import Twin
    from itbench_agents.twin.telemetry.sources import Matcher, TraceQuery

    t = time.process_time()
    twin = Twin.for_app(app, seed=1, clock=ManualClock(), history_s=history_s)
    print(
        f"twin {app} with {history_s:.0f} s of history built in {(time.process_time() - t) * 1000:.0f} ms CPU"
    )
    metrics, logs, traces_src = twin.metrics, twin.logs, twin.traces
    assert metrics is not None and logs is not None and traces_src is not None
    now = twin.now()
    start_ms, end_ms = int((now - history_s) * 1000), int(now * 1000)
    for name, spec in SELECTORS.items():
        ms = [Matcher(n, op, v) for n, op, v in spec]  # type: ignore[arg-type]

        def query(ms: list[Matcher] = ms) -> Any:
            return metrics.select(ms, start_ms, end_ms)

        cold, _ = _cpu_ms(query, repeat=1)
        warm, out = _cpu_ms(query)
        print(f"  {name:28s} series={len(out):5d}  first={cold:7.1f} ms  median={warm:7.2f} ms")
    ns0, ns1 = start_ms * 1_000_000, end_ms * 1_000_000
    ms_all, streams = _cpu_ms(lambda: logs.streams([Matcher("namespace", "=~", ".+")], ns0, ns1), repeat=1)
    lines = sum(len(s.entries) for s in streams)
    print(f"  logs: all {len(streams)} streams, {lines} lines: {ms_all:.0f} ms")
    ms_tr, traces = _cpu_ms(lambda: traces_src.find_traces(TraceQuery(service="frontend", limit=20)))
    print(f"  traces: 20 of frontend: {len(traces)} found, median {ms_tr:.1f} ms")


if __name__ == "__main__":  # pragma: no cover
    main(
        sys.argv[1] if len(sys.argv) > 1 else "otel-demo", float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0
    )
