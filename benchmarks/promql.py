"""PromQL benchmark: the realistic SRE corpus on 1 h at 15 s step.

Runs each corpus query against the twin's engine over ``Twin.for_app("otel-demo").metrics`` (the whole
Astronomy Shop) and over the synthetic SRE scenario; where Debian's prometheus is installed, also
against real Prometheus on the same synthetic data in the same run, and prints per-query medians and
the ratio twin/Prometheus.

    uv run python benchmarks/promql.py [--repeat 5] [--no-twin]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from itbench_agents.twin.prometheus.engine import Engine
from itbench_dev.prometheus.corpus import CORPUS
from itbench_dev.prometheus.realprom import RealPrometheus
from itbench_dev.prometheus.synthetic import Scenario, generate


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-twin", action="store_true", help="skip the Twin.for_app('otel-demo') run")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    console = Console()

    sc = Scenario()
    src = generate(sc)
    end_s = sc.start_s + sc.duration_s
    start_s = end_s - 3600 + 300  # 1 h window (5 m into the data so every rate has history)
    syn = Engine(src)

    twin_engine = None
    twin_window = (0, 0)
    if not args.no_twin:
        try:
            from itbench_agents.twin.instance import Twin

            twin = Twin.for_app("otel-demo", seed=1)
            twin_engine = Engine(twin.metrics)  # type: ignore[arg-type]
            now = twin.now()
            twin_window = (int((now - 3600) * 1000), int(now * 1000))
            console.print(f"twin: Twin.for_app('otel-demo') metrics, 1 h ending at {now:.0f}")
            from itbench_agents.twin.telemetry.sources import Matcher

            bucket = [Matcher("__name__", "=", "traces_span_metrics_duration_milliseconds_bucket")]
            metrics = twin.metrics
            assert metrics is not None
            sel = median_ms(
                lambda: metrics.select(bucket, twin_window[0] - 300_000, twin_window[1]), args.repeat
            )
            n = len(metrics.select(bucket, twin_window[0] - 300_000, twin_window[1]))
            console.print(
                f"  (of which the series source alone needs {sel:.1f} ms to produce the {n} bucket series "
                "that the latency queries select)"
            )
        except Exception as exc:  # noqa: BLE001 - report and continue with the synthetic data
            console.print(f"[yellow]twin unavailable ({type(exc).__name__}: {exc}); synthetic data only[/]")

    real = None
    tmp = tempfile.TemporaryDirectory()
    try:
        real = RealPrometheus.start(src, Path(tmp.name))
        if real is None:
            console.print("[yellow]prometheus/promtool not installed: no comparison with real Prometheus[/]")
        table = Table(title=f"PromQL corpus, range queries over 1 h at 15 s step (median of {args.repeat})")
        table.add_column("query")
        if twin_engine is not None:
            table.add_column("twin otel-demo ms", justify="right")
        table.add_column("twin synthetic ms", justify="right")
        if real is not None:
            table.add_column("prometheus ms", justify="right")
            table.add_column("ratio twin/prom", justify="right")
        ratios, twin_times, syn_times = [], [], []
        for q in CORPUS:
            row = [q.name]
            if twin_engine is not None:
                te = twin_engine
                tm = median_ms(lambda te=te, q=q: te.range(q.expr, *twin_window, 15000), args.repeat)
                twin_times.append(tm)
                row.append(f"{tm:.1f}")
            sm = median_ms(
                lambda q=q: syn.range(q.expr, int(start_s * 1000), int(end_s * 1000), 15000), args.repeat
            )
            syn_times.append(sm)
            row.append(f"{sm:.1f}")
            if real is not None:
                rp = real
                pm = median_ms(
                    lambda rp=rp, q=q: rp.get(
                        "/api/v1/query_range",
                        query=q.expr,
                        start=f"{start_s:.3f}",
                        end=f"{end_s:.3f}",
                        step="15",
                    ),
                    args.repeat,
                )
                ratios.append(sm / pm)
                row += [f"{pm:.1f}", f"{sm / pm:.2f}x"]
            table.add_row(*row)
        console.print(table)
        if twin_times:
            console.print(
                f"twin otel-demo: median {statistics.median(twin_times):.1f} ms, max {max(twin_times):.1f} ms "
                f"({sum(t < 100 for t in twin_times)}/{len(twin_times)} queries < 100 ms)"
            )
        console.print(
            f"twin synthetic: median {statistics.median(syn_times):.1f} ms, max {max(syn_times):.1f} ms"
        )
        if ratios:
            console.print(
                f"ratio twin/prometheus (HTTP, same data): median {statistics.median(ratios):.2f}x, "
                f"max {max(ratios):.2f}x"
            )
    finally:
        if real is not None:
            real.stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
