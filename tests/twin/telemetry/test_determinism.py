"""Same seed → identical answers; another seed → other noise around the same signal."""

from __future__ import annotations

import numpy as np
from telemetry_fixtures import T0, build_shop

from itbench_agents.twin.telemetry.sources import Matcher, TraceQuery

SELECTORS = [
    [Matcher("__name__", "=", "traces_span_metrics_calls_total")],
    [
        Matcher("__name__", "=", "traces_span_metrics_duration_milliseconds_bucket"),
        Matcher("service_name", "=", "payment"),
    ],
    [Matcher("__name__", "=~", "container_.*")],
    [Matcher("__name__", "=~", "kube_pod_.*")],
]


def dump(twin):
    out = []
    for ms in SELECTORS:
        for s in twin.metrics.select(ms, int(T0 * 1000), int(twin.now() * 1000)):
            out.append(
                (
                    tuple(sorted((k, v) for k, v in s.labels.items() if k != "uid")),
                    s.timestamps_ms.tobytes(),
                    s.values.tobytes(),
                )
            )
    return sorted(out)


def test_same_seed_identical_series_logs_traces():
    a, b = build_shop(seed=7, history_s=900), build_shop(seed=7, history_s=900)
    assert dump(a) == dump(b)
    pod = "payment-7d4b9c6f5-abcde"
    assert a.logs.pod_log("shop", pod, "payment") == b.logs.pod_log("shop", pod, "payment")
    q = TraceQuery(service="payment", limit=5)
    ta, tb = a.traces.find_traces(q), b.traces.find_traces(q)
    assert [t.trace_id for t in ta] == [t.trace_id for t in tb]
    assert [[(s.span_id, s.duration_us) for s in t.spans] for t in ta] == [
        [(s.span_id, s.duration_us) for s in t.spans] for t in tb
    ]


def test_repeated_queries_do_not_change_answers(shop):
    first = dump(shop)
    shop.metrics.select([Matcher("__name__", "=", "up")], int(T0 * 1000), int(shop.now() * 1000))
    assert dump(shop) == first


def test_other_seed_other_noise_same_signal():
    a, b = build_shop(seed=1, history_s=1800), build_shop(seed=2, history_s=1800)
    ms = [
        Matcher("__name__", "=", "traces_span_metrics_calls_total"),
        Matcher("service_name", "=", "payment"),
    ]
    sa = a.metrics.select(ms, int(T0 * 1000), int(a.now() * 1000))[0]
    sb = b.metrics.select(ms, int(T0 * 1000), int(b.now() * 1000))[0]
    assert not np.array_equal(sa.values, sb.values)
    # but both average to the health rate
    assert abs(sa.values[-1] - sb.values[-1]) < 150
    pod = "payment-7d4b9c6f5-abcde"
    assert a.logs.pod_log("shop", pod, "payment") != b.logs.pod_log("shop", pod, "payment")
    assert (
        a.traces.find_traces(TraceQuery(service="payment", limit=1))[0].trace_id
        != b.traces.find_traces(TraceQuery(service="payment", limit=1))[0].trace_id
    )


_SCRIPT = """
import hashlib, sys
sys.path.insert(0, {tests!r})
from telemetry_fixtures import T0, build_shop
from itbench_agents.twin.telemetry.sources import Matcher, TraceQuery
tw = build_shop(seed=5, history_s=600)
h = hashlib.sha256()
for s in tw.metrics.select([Matcher("__name__", "=~", ".+")], int(T0 * 1000), int(tw.now() * 1000)):
    h.update(repr(sorted(s.labels.items())).encode() + s.timestamps_ms.tobytes() + s.values.tobytes())
for st in tw.logs.streams([Matcher("namespace", "=", "shop")], int(T0 * 1e9), int(tw.now() * 1e9)):
    h.update(repr((sorted(st.labels.items()), st.entries)).encode())
for t in tw.traces.find_traces(TraceQuery(service="frontend", limit=10)):
    h.update(repr([(s.span_id, s.parent_span_id, s.start_us, s.duration_us, sorted(s.tags.items())) for s in t.spans]).encode())
print(h.hexdigest())
"""


def test_identical_across_processes_whatever_the_hash_seed():
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = _SCRIPT.format(tests=str(Path(__file__).parent))
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        res = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert res.returncode == 0, res.stderr
        outs.append(res.stdout.strip())
    assert outs[0] == outs[1] and len(outs[0]) == 64
