"""Engine details not (or not directly) covered by the upstream scripts: the twin's needs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from itbench_agents.twin.prometheus.durations import rewrite
from itbench_agents.twin.prometheus.engine import Engine
from itbench_agents.twin.prometheus.extended import mark
from itbench_agents.twin.prometheus.memstore import MemorySeriesSource
from itbench_agents.twin.prometheus.syntax import go_regex
from itbench_agents.twin.prometheus.values import PromQLError, fmt_float
from itbench_agents.twin.telemetry.sources import STALE_NAN


@pytest.fixture
def src() -> MemorySeriesSource:
    s = MemorySeriesSource()
    ts = [i * 15_000 for i in range(41)]  # 10 minutes at 15 s
    s.add({"__name__": "req_total", "svc": "a"}, ts, [float(i * 3) for i in range(41)])
    s.add(
        {"__name__": "req_total", "svc": "b"}, ts[:21] + [ts[21]], [float(i) for i in range(21)] + [STALE_NAN]
    )
    return s


def test_stale_marker_ends_series_before_lookback(src: MemorySeriesSource) -> None:
    e = Engine(src)
    at_stale = 21 * 15_000
    assert {lb["svc"] for lb, _, _ in e.instant("req_total", at_stale - 1).vector} == {"a", "b"}
    assert {lb["svc"] for lb, _, _ in e.instant("req_total", at_stale).vector} == {"a"}  # not 5 m later


def test_rate_and_range_query_shape(src: MemorySeriesSource) -> None:
    e = Engine(src)
    res = e.range('rate(req_total{svc="a"}[1m])', 60_000, 600_000, 60_000)
    assert res.result_type == "matrix" and len(res.matrix) == 1
    lb, ts, vs = res.matrix[0]
    assert lb == {"svc": "a"} and len(ts) == 10
    assert np.allclose(vs, 0.2)  # 3 per 15 s


def test_range_limit_and_bad_step(src: MemorySeriesSource) -> None:
    e = Engine(src)
    with pytest.raises(PromQLError, match="11,000 points"):
        e.range("req_total", 0, 11_001 * 1000, 1000)
    with pytest.raises(PromQLError) as exc:
        e.range("req_total", 0, 1000, 0)
    assert exc.value.error_type == "bad_data"


def test_parse_errors_are_bad_data(src: MemorySeriesSource) -> None:
    with pytest.raises(PromQLError) as exc:
        Engine(src).instant("sum(rate(req_total[5m])", 0)
    assert exc.value.error_type == "bad_data" and "parse error" in exc.value.message


def test_go_regex_inline_flags() -> None:
    import re

    assert re.fullmatch(go_regex("((?i)PRO).*"), "production")
    assert not re.fullmatch(go_regex("((?i)PRO)D"), "prod")


def test_duration_expressions_rewrite() -> None:
    assert rewrite("rate(x[2m*15])") == "rate(x[1800000ms])"
    assert rewrite("x offset (1m+30s) + 2") == "x offset 90000ms + 2"
    assert rewrite('x{a="[1m*2]"}[5m]') == 'x{a="[1m*2]"}[5m]'  # strings untouched
    assert rewrite("count_over_time(x[step()])", step_s=15) == "count_over_time(x[15000ms])"


def test_extended_selector_marking() -> None:
    assert mark("increase(x[1m] anchored)") == 'increase(x{__ext__="anchored"}[1m])'
    assert mark('x{a="b"} offset 1m smoothed') == 'x{a="b",__ext__="smoothed"} offset 1m'
    assert mark('x{a="anchored"}') == 'x{a="anchored"}'


def test_sample_value_format() -> None:
    assert [fmt_float(v) for v in (1.0, 0.1, 1e21, -2.5, math.inf, math.nan)] == [
        "1",
        "0.1",
        "1000000000000000000000",
        "-2.5",
        "+Inf",
        "NaN",
    ]


def test_regex_matchers_use_go_semantics() -> None:
    s = MemorySeriesSource()
    for v in ("c", "ab", "aB", "x1"):
        s.add({"__name__": "m", "v": v}, [0], [1.0])
    e = Engine(s)

    def vals(q: str) -> set[str]:
        return {lb["v"] for lb, _, _ in e.instant(q, 0).vector}

    assert vals('m{v=~"a(?i)b|c"}') == {"ab", "aB", "c"}  # RE2: the flag applies to the rest of the group
    assert vals('m{v=~"[[:alpha:]]+"}') == {"c", "ab", "aB"}  # POSIX class
    assert vals('m{v!~"(a+)+b"}') == {"c", "aB", "x1"}
