"""The LogQL engine's parts on their own: templates, logfmt, units, and the parser's tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from itbench_agents.twin.loki.gotemplate import Template, TemplateError
from itbench_agents.twin.loki.lint import check_logql
from itbench_agents.twin.loki.logql import Engine, Limits, QueryError, Vec
from itbench_agents.twin.loki.memory import InMemoryLogSource
from itbench_agents.twin.loki.nodes import BinOp, LineFilter, LogQuery, RangeAgg, VectorAgg
from itbench_agents.twin.loki.parser import LogQLParseError, parse_logql
from itbench_agents.twin.loki.pipeline import LogfmtError, parse_logfmt
from itbench_agents.twin.loki.units import parse_bytes, parse_go_duration, parse_prom_duration
from itbench_agents.twin.telemetry.sources import LogStream


def test_template_rendering() -> None:
    labels = {"app": "cart", "level": "error", "msg": "  boom  "}
    assert Template.parse("{{.app}}/{{ .level | ToUpper }}").render(labels) == "cart/ERROR"
    assert Template.parse('{{ printf "%s=%s" .app .level }}').render(labels) == "cart=error"
    assert Template.parse("[{{ .msg | trim }}]").render(labels) == "[boom]"
    assert Template.parse('{{ .missing | default "n/a" }}').render(labels) == "n/a"
    assert Template.parse("{{ __line__ }}!").render(labels, line="raw") == "raw!"
    assert Template.parse("{{ __timestamp__ }}").render({}, ts_ns=1_767_225_600_500_000_000) == (
        "2026-01-01 00:00:00.5 +0000 UTC"
    )
    t = Template.parse('{{if eq .level "error"}}E{{else if eq .level "warn"}}W{{else}}I{{end}}')
    assert [t.render({"level": v}) for v in ("error", "warn", "info")] == ["E", "W", "I"]
    assert Template.parse("a {{- .app -}} b").render(labels) == "acartb"


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("{{", "template: line:1: unclosed action"),
        ("{{ nope .x }}", 'template: line:1: function "nope" not defined'),
        ("{{if .x}}a", "template: line:1: unexpected EOF"),
        ("{{end}}", "template: line:1: unexpected {{end}}"),
    ],
)
def test_template_errors(src: str, message: str) -> None:
    with pytest.raises(TemplateError) as err:
        Template.parse(src)
    assert str(err.value) == message


def test_logfmt_reading() -> None:
    assert parse_logfmt('a=1 b="x \\"y\\"" flag c=', False, False) == [("a", "1"), ("b", 'x "y"')]
    assert parse_logfmt("flag c=", False, True) == [("flag", ""), ("c", "")]
    assert parse_logfmt("=x a=1", False, False) == [("a", "1")]
    with pytest.raises(LogfmtError, match="unexpected '='"):
        parse_logfmt("=x a=1", True, False)
    with pytest.raises(LogfmtError, match="unterminated quoted value"):
        parse_logfmt('a="open', True, False)


def test_units() -> None:
    assert parse_prom_duration("1h30m") == 5400 * 10**9
    assert parse_prom_duration("2d") == 2 * 86400 * 10**9
    with pytest.raises(ValueError, match='not a valid duration string: "30m1h"'):
        parse_prom_duration("30m1h")
    assert parse_go_duration("1.5s") == 1.5
    assert parse_go_duration("250ms") == 0.25
    assert parse_go_duration("-1m30s") == -90.0
    with pytest.raises(ValueError, match='time: missing unit in duration "10"'):
        parse_go_duration("10")
    assert parse_bytes("10KB") == 10_000
    assert parse_bytes("1KiB") == 1024
    assert parse_bytes("3mb") == 3_000_000


def test_parser_builds_the_expected_tree() -> None:
    e = parse_logql('sum by (app) (rate({app="cart"} |= "err" [5m])) / 2')
    assert isinstance(e, BinOp) and e.op == "/"
    agg = e.lhs
    assert isinstance(agg, VectorAgg) and agg.op == "sum" and agg.grouping is not None
    assert agg.grouping.labels == ("app",) and not agg.grouping.without
    rng = agg.inner
    assert isinstance(rng, RangeAgg) and rng.op == "rate" and rng.range.range_ns == 300 * 10**9
    (lf,) = rng.range.log.stages
    assert isinstance(lf, LineFilter) and lf.op == "|=" and lf.values == ("err",)
    log = parse_logql('{a="b"} |= "x" | json')
    assert isinstance(log, LogQuery) and len(log.stages) == 2
    # precedence: ^ binds tighter than *, which binds tighter than +; ^ is right-associative
    assert parse_logql("2 ^ 3 ^ 2") == parse_logql("2 ^ (3 ^ 2)")
    assert parse_logql("1 + 2 * 3") == parse_logql("1 + (2 * 3)")


@pytest.mark.parametrize(
    "query",
    [
        '{app="cart"} | line_format "{{"',
        "1 > 2",
        'topk(0, count_over_time({a="b"}[1m]))',
        'count_over_time({a="b"} | unwrap x [1m])',
        'rate({a="b"}[5m]) by (a)',
        '{a="b"} | pattern "<a><b>"',
        '{a="b"} | label_format x=a, x=b',
        'count_over_time({a="b"}[5m:1m])',
    ],
)
def test_invalid_queries_are_rejected(query: str) -> None:
    with pytest.raises(LogQLParseError):
        parse_logql(query)
    assert check_logql(query) is not None


# ----------------------------------------------------------------------------- engine equivalences
_T0 = 1_767_225_600 * 10**9
_S = 10**9


def _brute_counts(ts: list[int], steps: list[int], off: int, rng: int) -> list[int]:
    return [sum(1 for x in ts if t - off - rng < x <= t - off) for t in steps]


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.lists(st.integers(0, 600), min_size=1, max_size=8), min_size=33, max_size=40),
    step=st.integers(1, 90),
    rng=st.integers(1, 200),
    off=st.integers(0, 100),
    first=st.integers(0, 300),
    npoints=st.integers(1, 12),
)
def test_many_series_counting_matches_brute_force(
    lines: list[list[int]], step: int, rng: int, off: int, first: int, npoints: int
) -> None:
    # more than 32 series take the vectorised path; every series is one stream here
    streams = [
        LogStream({"app": "x", "n": str(i)}, [(_T0 + s * _S, f"line {s}") for s in sorted(set(ts))])
        for i, ts in enumerate(lines)
    ]
    steps = np.arange(
        _T0 + first * _S, _T0 + (first + step * (npoints - 1)) * _S + 1, step * _S, dtype=np.int64
    )
    expr = parse_logql(f'count_over_time({{app="x"}}[{rng}s] offset {off}s)')
    assert isinstance(expr, RangeAgg)
    res = Engine(InMemoryLogSource(streams)).eval_metric(expr, steps)
    assert isinstance(res.value, Vec)
    got = {
        s.labels["n"]: [int(v) if p else 0 for v, p in zip(s.values, s.present, strict=True)]
        for s in res.value.series
    }
    for i, st_ in enumerate(streams):
        want = _brute_counts([t for t, _ in st_.entries], [int(t) for t in steps], off * _S, rng * _S)
        assert got.get(str(i), [0] * len(steps)) == want


def test_fused_sum_equals_unfused() -> None:
    streams = [
        LogStream(
            {"app": "a"},
            [(_T0 + i * _S, f'{{"level": "{"error" if i % 3 else "info"}", "id": {i}}}') for i in range(200)],
        )
    ]
    eng = Engine(InMemoryLogSource(streams))
    steps = np.arange(_T0, _T0 + 200 * _S + 1, 10 * _S, dtype=np.int64)
    for fn in ("count_over_time", "rate", "bytes_over_time"):
        inner = f'{fn}({{app="a"}} | json [30s])'
        fused = eng.eval_metric(parse_logql(f"sum by (level) ({inner})"), steps).value  # type: ignore[arg-type]
        plain = eng.eval_metric(parse_logql(f"sum by (level) ({inner} * 1)"), steps).value  # type: ignore[arg-type]
        assert isinstance(fused, Vec) and isinstance(plain, Vec)
        f = {s.labels["level"]: s for s in fused.series}
        p = {s.labels["level"]: s for s in plain.series}
        assert set(f) == set(p) == {"error", "info"}
        for level in f:
            assert (f[level].present == p[level].present).all()
            assert np.allclose(
                f[level].values[f[level].present], p[level].values[p[level].present], rtol=1e-12
            )


def test_cardinality_guard() -> None:
    streams = [LogStream({"app": "a"}, [(_T0 + i * _S, f"id={i}") for i in range(100)])]
    eng = Engine(InMemoryLogSource(streams), Limits(max_cells=500))
    steps = np.arange(_T0, _T0 + 100 * _S + 1, 10 * _S, dtype=np.int64)
    with pytest.raises(QueryError, match=r"maximum of series \(45\) reached for a single query"):
        eng.eval_metric(parse_logql('count_over_time({app="a"} | logfmt [1m])'), steps)  # type: ignore[arg-type]
    # the same lines summed per group stay cheap
    res = eng.eval_metric(parse_logql('sum(count_over_time({app="a"} | logfmt [1m]))'), steps)  # type: ignore[arg-type]
    assert isinstance(res.value, Vec) and len(res.value.series) == 1
