"""Snapshot benchmarks (issue 18): prints numbers, asserts nothing.

For each scenario: one episode brought up on the twin (deploy, churn, faults, alert wait), then

1. recording its observable state (``snapshots/record.py``: objects, alerts, raw samples, logs,
   traces) at the default 1800 s window — time and size on disk;
2. reading the folder back (``load_snapshot``) and building the replay twin (``replay_twin``);
3. the same queries answered by the live episode's twin and by the replay (medians of 5):
   ``kubectl get pods -o json``-style LIST, a PromQL rate over 2 minutes, Jaeger's error search —
   the ratio replay / twin.

    uv run python benchmarks/snapshots.py
    uv run python benchmarks/snapshots.py -s sre/payment-failure-flag-v1 --window-s 900
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from itbench_agents.harness.twin_env import TwinEnvironment
from itbench_agents.k8s.client import KubeApi
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.snapshots.read import load_snapshot
from itbench_agents.snapshots.record import Recorder, write_snapshot
from itbench_agents.twin.replay import replay_twin

QUERY = 'sum by (service_name) (rate(traces_span_metrics_calls_total{status_code="STATUS_CODE_ERROR"}[2m]))'


def median_s(fn: Callable[[], Any], repeat: int = 5) -> float:
    fn()  # warm
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def queries(
    api: KubeApi, prometheus: str | None, jaeger: str | None, ns: str, now: float
) -> dict[str, Callable[[], Any]]:
    service = "frontend"
    assert prometheus and jaeger, "the episode serves Prometheus and Jaeger"
    return {
        "LIST pods": lambda: api.list("v1", "Pod", ns),
        "PromQL rate[2m]": lambda: requests.get(
            prometheus + "/api/v1/query", params={"query": QUERY, "time": str(now)}, timeout=60
        ).json(),
        "Jaeger error search": lambda: requests.get(
            jaeger + "/api/traces",
            params={
                "service": service,
                "tags": '{"error":"true"}',
                "start": str(int((now - 900) * 1e6)),
                "end": str(int(now * 1e6)),
                "limit": "50",
            },
            timeout=60,
        ).json(),
    }


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def bench(sid: str, window_s: float) -> None:
    sc = ScenarioRegistry.default().get(sid)
    env = TwinEnvironment(sc, seed=0, workdir=tempfile.mkdtemp(), churn="default")
    out = Path(tempfile.mkdtemp(prefix="itbench-snapbench-")) / "snap"
    try:
        env.deploy()
        env.inject()
        env.wait_for_alerts()
        ep = env.endpoints
        assert env.api is not None
        now = env.now()
        rec = Recorder(
            env.api, ep.prometheus_url, ep.loki_url, ep.jaeger_url, now, window_s=window_s,
            secret_namespaces=[sc.namespace],
        )  # fmt: skip
        t0 = time.perf_counter()
        meta = write_snapshot(
            rec,
            out,
            sc,
            seed=0,
            injected_at=env.injected_at,
            fault_objects=env.fault_objects,
            replicasets_before=env.replicasets_before,
            call_edges=env.call_edges(),
        )
        record_s = time.perf_counter() - t0
        print(f"{sid}: window {window_s:.0f} s")
        print(
            f"  record      {record_s:6.2f} s  {folder_mb(out):7.1f} MB  "
            f"({meta.counts['objects']} objects, {meta.counts['series']} series, {meta.counts['samples']} samples, "
            f"{meta.counts['log_lines']} log lines, {meta.counts['spans']} spans)"
        )
        t0 = time.perf_counter()
        _, recording = load_snapshot(out)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        twin = replay_twin(recording)
        build_s = time.perf_counter() - t0
        served = twin.serve(out.parent / "served")
        print(f"  load        {load_s:6.2f} s   replay twin {build_s:5.2f} s")
        try:
            live = queries(env.api, ep.prometheus_url, ep.jaeger_url, sc.namespace, now)
            replay = queries(
                KubeApi(served.kube_url),
                served.prometheus_url,
                served.jaeger_url,
                sc.namespace,
                recording.now,
            )
            for name in live:
                a, b = median_s(live[name]), median_s(replay[name])
                print(
                    f"  {name:20s} twin {a * 1000:8.1f} ms   replay {b * 1000:8.1f} ms   ratio {b / a:5.2f}"
                )
        finally:
            twin.close()
    finally:
        env.teardown()
        shutil.rmtree(out.parent, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "-s",
        "--scenario",
        action="append",
        help="scenario id (repeatable; default: one hotel-reservation and one otel-demo scenario)",
    )
    ap.add_argument("--window-s", type=float, default=1800.0)
    args = ap.parse_args()
    for sid in args.scenario or ["sre/hotel-geo-scaled-to-zero-v1", "sre/payment-failure-flag-v1"]:
        bench(sid, args.window_s)


if __name__ == "__main__":
    main()
