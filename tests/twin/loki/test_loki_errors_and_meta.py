"""Loki's error format for bad queries and parameters, the label/series endpoints, and a fuzz run."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loki_fixtures import T0

from itbench_agents.twin.loki.lint import check_logql


def get(loki: str, endpoint: str, **params: Any) -> requests.Response:
    return requests.get(f"{loki}/loki/api/v1/{endpoint}", params=params, timeout=10)


def bad(resp: requests.Response) -> str:
    assert resp.status_code == 400, resp.text
    assert resp.headers["Content-Type"].startswith("text/plain")
    return resp.text.rstrip("\n")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ('{app="cart"', "parse error at line 1, col 12: syntax error: unexpected $end, expecting } or ,"),
        ("{}", "parse error at line 1, col 2: syntax error: unexpected }, expecting IDENTIFIER"),
        ("{app=}", "parse error at line 1, col 6: syntax error: unexpected }, expecting STRING"),
        ("cart_requests_total", "parse error at line 1, col 1: syntax error: unexpected IDENTIFIER"),
        (
            '{app="cart"} |= ',
            "parse error at line 1, col 17: syntax error: unexpected $end, expecting STRING",
        ),
        (
            'count_over_time({app="cart"})',
            "parse error at line 1, col 29: syntax error: unexpected ), expecting RANGE",
        ),
        (
            '{app=~".*"}',
            "parse error : queries require at least one regexp or equality matcher that does not have an "
            'empty-compatible value. For instance, app=~".*" does not meet this requirement, but app=~".+" will',
        ),
        (
            'sum_over_time({app="cart"}[5m])',
            "parse error : invalid aggregation sum_over_time without unwrap",
        ),
        (
            '{app="cart"} | regexp "[a-z]+"',
            "parse error : invalid regexp parser: at least one named capture must be supplied",
        ),
    ],
)
def test_parse_errors_are_400_text_in_lokis_words(loki: str, query: str, message: str) -> None:
    assert bad(get(loki, "query_range", query=query)) == message


def test_bad_regex_reports_position_in_gos_words(loki: str) -> None:
    msg = bad(get(loki, "query_range", query='{app="cart"} |~ "("'))
    assert msg == "parse error at line 1, col 17: error parsing regexp: missing closing ): `(`"
    msg = bad(get(loki, "query_range", query='{app="cart"} |~ "a(?=b)"'))
    assert (
        msg
        == "parse error at line 1, col 17: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
    )
    msg = bad(get(loki, "query_range", query='{app=~"(x"}'))
    assert msg == "parse error at line 1, col 7: error parsing regexp: missing closing ): `^(?s:(x)$`"


@pytest.mark.parametrize(
    "query",
    [
        '{app="cart"} |~ "(.*)*x"',
        '{app="cart"} |~ "(a+)+$" or "(.*.*)*y"',
        '{pod=~"(.*)*x"}',
        '{app="cart", pod!~"(.*)*x"}',
        '{app="cart"} | json | msg=~"(.*)*x"',
        '{app="cart"} | regexp "(?P<a>(.*)*x)"',
        'sum(count_over_time({app="cart"} |~ "(.*)*x" [10m]))',
    ],
)
def test_pathological_regexes_run_in_linear_time(loki: str, query: str) -> None:
    # Python's backtracking re needs minutes for these on 100-character lines; RE2 does not.
    r = get(loki, "query_range", query=query, limit=10)
    assert r.status_code == 200, r.text


def test_regex_semantics_are_re2s(loki: str) -> None:
    r = get(loki, "query_range", query=r'{app="cart"} |~ `request \d\d failed`', limit=1000)
    assert sum(len(s["values"]) for s in r.json()["data"]["result"]) == 10
    r = get(loki, "query_range", query='{app=~"(?<x>cart)"}', limit=1)
    assert r.status_code == 200 and r.json()["data"]["result"][0]["stream"]["app"] == "cart"


def test_unterminated_string(loki: str) -> None:
    assert (
        bad(get(loki, "query_range", query='{app="cart}'))
        == "parse error at line 1, col 6: literal not terminated"
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"limit": "6000"},
            "max entries limit per query exceeded, limit > max_entries_limit_per_query (6000 > 5000)",
        ),
        ({"limit": "-1"}, "limit must be a positive value"),
        ({"limit": "many"}, 'strconv.ParseUint: parsing "many": invalid syntax'),
        ({"direction": "sideways"}, "invalid direction 'sideways'"),
        ({"start": str(T0 + 10), "end": str(T0)}, "end timestamp must not be before or equal to start time"),
        ({"start": "yesterday"}, 'strconv.ParseInt: parsing "yesterday": invalid syntax'),
        ({"since": "forever"}, 'not a valid duration string: "forever"'),
        (
            {"start": "0", "end": str(T0)},
            "the query time range exceeds the limit (query length: 490896h0m0s, limit: 30d1h)",
        ),
    ],
)
def test_bad_parameters(loki: str, params: dict[str, str], message: str) -> None:
    assert bad(get(loki, "query_range", query='{app="cart"}', **params)) == message


def test_bad_steps(loki: str) -> None:
    q = 'count_over_time({app="cart"}[1m])'
    assert bad(get(loki, "query_range", query=q, step="0")) == (
        "zero or negative query resolution step widths are not accepted. Try a positive integer"
    )
    assert bad(get(loki, "query_range", query=q, step="1ms")) == (
        "exceeded maximum resolution of 11,000 points per time series. Try increasing the value of the step "
        "parameter"
    )
    assert bad(get(loki, "query_range", query=q, step="soon")) == 'cannot parse "soon" to a valid duration'


def test_log_query_refused_as_instant_query(loki: str) -> None:
    assert bad(get(loki, "query", query='{app="cart"}')) == (
        "log queries are not supported as an instant query type, please change your query to a range query type"
    )


def test_labels_values_and_series(loki: str) -> None:
    assert get(loki, "labels").json() == {
        "status": "success",
        "data": ["app", "container", "namespace", "pod"],
    }
    assert get(loki, "label/app/values").json()["data"] == ["cart", "checkout", "proxy"]
    assert get(loki, "label/app/values", query='{namespace="otel-demo"}').json()["data"] == [
        "cart",
        "checkout",
    ]
    assert get(loki, "label/app/values", start=T0 + 10_000, end=T0 + 20_000).json()["data"] == []
    series = get(loki, "series", **{"match[]": '{namespace="otel-demo"}'}).json()
    assert series["status"] == "success"
    assert [s["app"] for s in series["data"]] == ["cart", "checkout"]
    both = requests.get(
        f"{loki}/loki/api/v1/series",
        params=[("match[]", '{app="cart"}'), ("match[]", '{app="proxy"}')],
        timeout=10,
    ).json()["data"]
    assert {s["app"] for s in both} == {"cart", "proxy"}
    assert (
        bad(get(loki, "series", **{"match[]": '{app="cart"} |= "x"'}))
        == "parse error : only label matchers are supported"
    )
    assert bad(get(loki, "series")) == "0 matcher groups supplied"


def test_index_stats(loki: str) -> None:
    stats = get(loki, "index/stats", query='{namespace="otel-demo"}').json()
    assert stats["streams"] == 2 and stats["entries"] == 90 and stats["bytes"] > 0
    stats = get(loki, "index/stats", query='sum(rate({app="proxy"}[1m]))').json()
    assert stats["streams"] == 1 and stats["entries"] == 20


def test_ready_buildinfo_and_unknown_paths(loki: str) -> None:
    r = requests.get(f"{loki}/ready", timeout=10)
    assert r.status_code == 200 and r.text.strip() == "ready"
    info = requests.get(f"{loki}/loki/api/v1/status/buildinfo", timeout=10).json()
    assert info["version"].startswith("3.")
    assert requests.get(f"{loki}/loki/api/v1/nope", timeout=10).status_code == 404
    assert requests.delete(f"{loki}/loki/api/v1/query_range", timeout=10).status_code == 405


def test_logql_lint() -> None:
    assert check_logql('sum by (app) (rate({namespace="otel-demo"} |= "error" [5m]))') is None
    msg = check_logql('rate(http_requests_total{app="cart"}[5m])')
    assert msg is not None and msg.startswith(
        "parse error at line 1, col 6: syntax error: unexpected IDENTIFIER"
    )
    assert "metric names are PromQL" in msg
    msg = check_logql('count_over_time({app="cart"})')
    assert msg is not None and "need a range" in msg
    assert check_logql("   ") == "empty LogQL query"


# ----------------------------------------------------------------------------- fuzz
_FRAGMENTS = [
    "{",
    "}",
    "(",
    ")",
    "[5m]",
    "[0s]",
    "[",
    "]",
    ",",
    " ",
    "app",
    "namespace",
    "=",
    "!=",
    "=~",
    "!~",
    '"cart"',
    '".*"',
    '"("',
    "`a`",
    "|=",
    "|~",
    "| json",
    "| logfmt",
    "| logfmt --strict",
    '| regexp "(?P<a>\\\\w+)"',
    '| pattern "<_> <s>"',
    '"(.*)*x"',
    '"(a+)+$"',
    '"(?<n>a)"',
    '"\\pN"',
    '| line_format "{{.app | ToUpper}}"',
    '| line_format "{{"',
    "| label_format a=app",
    "| keep app",
    "| drop pod",
    "| unwrap status",
    "| status > 1KB",
    '| level=~"e.*"',
    "count_over_time(",
    "rate(",
    "sum by (app) (",
    "topk(2,",
    "quantile_over_time(0.9,",
    "offset 1h",
    " or ",
    " and ",
    "+",
    "/",
    "> bool",
    "1",
    "1e308",
    "-",
    "vector(1)",
    "label_replace(",
    "__error__",
    '""',
    "#",
    "\\",
    "\x00",
    "é",
]
_valid = st.sampled_from(
    [
        '{app="cart"}',
        '{namespace="otel-demo"} | json | level="error"',
        'sum by (app) (count_over_time({namespace=~".+"}[1m]))',
        'rate({app="checkout"} | logfmt | latency > 1ms [30s])',
    ]
)
_queries = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(_FRAGMENTS), max_size=14).map("".join),
    st.tuples(_valid, st.lists(st.sampled_from(_FRAGMENTS), max_size=4).map("".join)).map("".join),
)
_params = st.fixed_dictionaries(
    {},
    optional={
        "limit": st.sampled_from(["1", "0", "-5", "5000", "abc", "99999999999999999999"]),
        "step": st.sampled_from(["1", "0.001", "15s", "1y", "-3", "nan", "inf", "1e400"]),
        "start": st.sampled_from(
            [str(T0), "0", "-1", "1e30", "2026-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "x"]
        ),
        "end": st.sampled_from([str(T0 + 600), "99999999999999999999", "1.5", "nan"]),
        "direction": st.sampled_from(["forward", "BACKWARD", ""]),
        "since": st.sampled_from(["1h", "0", "5x"]),
        "time": st.sampled_from([str(T0 + 300), "inf", "-1"]),
    },
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=_queries, params=_params, endpoint=st.sampled_from(["query_range", "query"]))
def test_fuzzed_queries_never_crash_the_server(
    loki: str, query: str, params: dict[str, str], endpoint: str
) -> None:
    r = get(loki, endpoint, query=query, **params)
    assert r.status_code in (200, 400), (query, params, r.status_code, r.text[:300])
    if r.status_code == 200:
        assert r.json()["status"] == "success"


def test_server_alive_after_fuzzing(loki: str) -> None:
    assert requests.get(f"{loki}/ready", timeout=10).status_code == 200
