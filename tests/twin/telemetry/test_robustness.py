"""Any window and any matcher: answers stay well-formed and never raise."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from telemetry_fixtures import T0, build_shop

from itbench_agents.twin.telemetry.sources import Matcher, TraceQuery, is_stale

SHOP = build_shop(history_s=1200)
NOW = SHOP.now()

names = st.sampled_from(["__name__", "service_name", "pod", "namespace", "status_code", "le", "job", "nope"])
values = st.sampled_from(
    ["", "payment", "traces_span_metrics_calls_total", "kube_pod_status_phase", "shop", "+Inf", "x"]
)
regexes = st.sampled_from(
    [".*", ".+", "pay.*", "traces_.*|kube_.*", "container_(cpu|memory).*", "(", "[a-z]+"]
)


@st.composite
def matcher(draw) -> Matcher:
    op = draw(st.sampled_from(["=", "!=", "=~", "!~"]))
    value = draw(regexes) if "~" in op else draw(values)
    return Matcher(draw(names), op, value)


times = st.floats(min_value=T0 - 7200, max_value=NOW + 7200, allow_nan=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(matcher(), min_size=1, max_size=3), times, times)
def test_select_is_well_formed(matchers, a, b):
    if any(m.value == "(" for m in matchers):  # invalid regexes are the parser's job (it rejects them)
        return
    out = SHOP.metrics.select(matchers, int(a * 1000), int(b * 1000))
    seen = set()
    for s in out:
        key = tuple(sorted(s.labels.items()))
        assert key not in seen  # no duplicate series
        seen.add(key)
        assert all(m.matches(s.labels) for m in matchers)
        assert len(s.timestamps_ms) == len(s.values) > 0
        assert np.all(np.diff(s.timestamps_ms) > 0)
        assert s.timestamps_ms[0] >= a * 1000 - 1e-6 and s.timestamps_ms[-1] <= min(b, NOW) * 1000 + 1e-6
        assert not np.any(np.isnan(s.values) & ~np.array([is_stale(float(v)) for v in s.values]))
        assert "" not in s.labels.values()


@settings(max_examples=30, deadline=None)
@given(
    times, times, st.sampled_from(["payment", "frontend", "nope", ""]), st.integers(min_value=0, max_value=50)
)
def test_logs_and_traces_any_window(a, b, app, limit):
    for stream in SHOP.logs.streams([Matcher("app", "=", app)], int(a * 1e9), int(b * 1e9)):
        ts = [t for t, _ in stream.entries]
        assert ts == sorted(ts) and all(a * 1e9 - 1e3 <= t < b * 1e9 + 1e3 for t in ts)
    traces = SHOP.traces.find_traces(
        TraceQuery(service=app, start_us=int(a * 1e6), end_us=int(b * 1e6), limit=limit)
    )
    assert len(traces) <= (limit or 10**9)
    for t in traces:
        assert SHOP.traces.get_trace(t.trace_id) is not None
