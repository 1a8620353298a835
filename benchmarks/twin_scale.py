"""How the twin scales: start-up with history, one minute of telemetry, memory, and growth when
the number of services and the time range double.

    uv run python benchmarks/twin_scale.py [--repeat 5]

Prints medians. Targets (issue 3): start < 1 s, memory < 300 MB, cost linear in services × time.
The scaling rows use synthetic apps of 15/30/60/120 services on one node per 10 services (a
bigger app on the same 3 nodes would leave pods Pending and measure something else).
"Telemetry" is everything the twin serves for the minute: every metric series (``twin.metrics``),
every log stream of the app namespace (``twin.logs``) and every trace of every service
(``twin.traces``).
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.telemetry.sources import Matcher, TraceQuery

T0 = 1_750_000_000.0
PODS = GroupResource("", "pods")


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of ``fn()``; returns the last result. Earlier results are closed and
    dropped before the next call, so no run pays the garbage collector for another's objects."""
    times, out = [], None
    for _ in range(repeat):
        if out is not None and hasattr(out, "close"):
            out.close()
        out = None
        gc.collect()
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def start(app: str | Path, history_s: float, nodes: int = 3) -> Twin:
    return Twin.for_app(app, clock=ManualClock(T0), history_s=history_s, nodes=nodes)


def nodes_for(services: int) -> int:
    """Worker nodes for a synthetic app: one per 10 services (each service asks 500m of CPU and
    a twin node has 8), so every pod is scheduled and doubling services doubles the cluster."""
    return max(3, -(-services // 10))


def telemetry_window(tw: Twin, seconds: float, end_offset: float = 0.0) -> dict[str, int]:
    """Compute every series, log stream and trace of ``seconds`` ending ``end_offset`` s ago."""
    end = tw.now() - end_offset
    begin = end - seconds
    assert tw.metrics is not None and tw.logs is not None and tw.traces is not None
    series = tw.metrics.select([Matcher("__name__", "=~", ".+")], int(begin * 1000), int(end * 1000))
    samples = sum(len(s.timestamps_ms) for s in series)
    streams = tw.logs.streams([Matcher("namespace", "=", tw.app.namespace)], int(begin * 1e9), int(end * 1e9))
    lines = sum(len(getattr(s, "entries", ()) or ()) for s in streams)
    traces = 0
    for svc in tw.traces.services():
        q = TraceQuery(service=svc, start_us=int(begin * 1e6), end_us=int(end * 1e6), limit=1_000_000)
        traces += len(tw.traces.find_traces(q))
    return {
        "series": len(series),
        "samples": samples,
        "streams": len(streams),
        "log_lines": lines,
        "traces": traces,
    }


def synthetic_app(folder: Path, n: int) -> Path:
    """A binary tree of ``n`` HTTP services (s0 calls s1, s2; s1 calls s3, s4; ...)."""
    (folder / "manifests").mkdir(parents=True)
    (folder / "app.yaml").write_text(
        yaml.safe_dump({"id": f"tree{n}", "namespace": f"tree{n}", "manifests": ["manifests"]})
    )
    objs: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"tree{n}"}}]
    services: dict[str, Any] = {
        "load": {"language": "go", "external": True, "dependencies": {"s0": {"default": "s0:8080"}}}
    }
    images = []
    for i in range(n):
        name = f"s{i}"
        kids = [k for k in (2 * i + 1, 2 * i + 2) if k < n]
        env = [{"name": f"S{k}_ADDR", "value": f"s{k}:8080"} for k in kids]
        objs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "containers": [
                                {
                                    "name": name,
                                    "image": f"registry.local/tree/{name}:1",
                                    "ports": [{"containerPort": 8080}],
                                    "env": env,
                                    "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}},
                                }
                            ]
                        },
                    },
                },
            }
        )
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name},
                "spec": {"selector": {"app": name}, "ports": [{"port": 8080, "targetPort": 8080}]},
            }
        )
        services[name] = {
            "language": "go",
            "listens": [{"port": 8080}],
            "operations": {
                f"GET /{name}": {
                    "latency_ms": {"p50": 2, "p95": 8},
                    "calls": [{"to": f"s{k}", "op": f"GET /s{k}"} for k in kids],
                }
            },
            "dependencies": {f"s{k}": {"addr_env": f"S{k}_ADDR", "default": f"s{k}:8080"} for k in kids},
        }
        images.append({"repo": f"registry.local/tree/{name}", "tags": ["1"]})
    (folder / "manifests" / "all.yaml").write_text(yaml.safe_dump_all(objs))
    behaviour = {
        "services": services,
        "load": {"service": "load", "calls": [{"to": "s0", "op": "GET /s0", "rate": 10}]},
        "probe": {"operations": [["s0", "GET /s0"]]},
        "images": images,
    }
    (folder / "behaviour.yaml").write_text(yaml.safe_dump(behaviour))
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    r = args.repeat

    # warm imports and caches once so the timings are of the work, not of Python's importer
    start("chain", 0).close()

    t_start, tw = median_time(lambda: start("otel-demo", 3600), r)
    n_services = len(tw.app.behaviour.services)
    print(f"start Astronomy Shop ({n_services} services) with 1 h history: median {t_start:.3f} s")
    t_min, counts = median_time(lambda: telemetry_window(tw, 60), r)
    print(f"one minute of all telemetry, all services: median {t_min:.3f} s  {counts}")
    t_probe, _ = median_time(tw.behaviour.probe, r)
    print(f"functional probe: median {t_probe * 1000:.1f} ms; health snapshots in 1 h: {len(tw.health)}")
    tw.close()

    gc.collect()
    tracemalloc.start()
    tw = start("otel-demo", 3600)
    telemetry_window(tw, 60)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tw.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"memory: tracemalloc peak {peak / 2**20:.1f} MiB (start + 1 minute of telemetry); process max RSS {rss:.0f} MiB"
    )

    print("\nscaling (synthetic binary-tree apps; ratios ~2.0 = linear):")
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for n in (15, 30, 60, 120):
            folder = synthetic_app(Path(tmp) / f"tree{n}", n)
            nodes = nodes_for(n)
            t_s, twn = median_time(lambda folder=folder, nodes=nodes: start(folder, 3600, nodes), r)
            pending = [p["metadata"]["name"] for p in twn.store.list(PODS) if not p["spec"].get("nodeName")]
            assert not pending, f"unscheduled pods in the synthetic app: {pending}"
            # distinct windows so that no result is served from a cache of the other
            t_2, _ = median_time(lambda twn=twn: telemetry_window(twn, 120, end_offset=1200), r)
            t_1, _ = median_time(lambda twn=twn: telemetry_window(twn, 60, end_offset=600), r)
            t_h2, tw2 = median_time(lambda folder=folder, nodes=nodes: start(folder, 7200, nodes), 1)
            tw2.close()
            twn.close()
            del tw2, twn  # the next size is not timed with this one's objects still alive
            rows.append((n, t_s, t_h2, t_1, t_2))
            print(
                f"  {n:3d} services on {nodes:2d} nodes: start 1 h {t_s:.3f} s ({t_s / n * 1000:.1f} ms/service), "
                f"start 2 h {t_h2:.3f} s (x{t_h2 / t_s:.2f}); "
                f"telemetry 1 min {t_1:.3f} s, 2 min {t_2:.3f} s (x{t_2 / t_1:.2f})"
            )
        for (n1, s1, _, m1, _), (n2, s2, _, m2, _) in zip(rows, rows[1:], strict=False):
            print(f"  services x2 ({n1}->{n2}): start x{s2 / s1:.2f}, telemetry minute x{m2 / m1:.2f}")

        # the same starts with CPython's cyclic garbage collector paused: what is left is the
        # twin's own work (the collector's passes grow with the live heap)
        print("\nstart with the cyclic GC paused during each start (the twin's own work):")
        paused = []
        for n in (15, 30, 60, 120):
            folder = Path(tmp) / f"tree{n}"
            t, paused_twin = median_time(
                lambda folder=folder, n=n: _without_gc(lambda: start(folder, 3600, nodes_for(n))), r
            )
            paused_twin.close()
            del paused_twin
            paused.append((n, t))
            print(f"  {n:3d} services: {t:.3f} s ({t / n * 1000:.1f} ms/service)")
        for (n1, t1), (n2, t2) in zip(paused, paused[1:], strict=False):
            print(f"  services x2 ({n1}->{n2}): start x{t2 / t1:.2f}")


def _without_gc(fn: Callable[[], Any]) -> Any:
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


if __name__ == "__main__":
    main()
