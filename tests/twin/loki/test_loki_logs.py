"""Log queries through real HTTP: selectors, line filters, parsers, label filters, formatting, limits."""

from __future__ import annotations

import datetime as dt
from typing import Any

import requests
from loki_fixtures import NOW, T0, FixtureHost, S

Json = dict[str, Any]


def qr(loki: str, query: str, **params: Any) -> requests.Response:
    return requests.get(f"{loki}/loki/api/v1/query_range", params={"query": query, **params}, timeout=10)


def ok(resp: requests.Response) -> Json:
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "success"
    return body["data"]


def entries(resp: requests.Response) -> list[tuple[int, str, dict[str, str]]]:
    data = ok(resp)
    assert data["resultType"] == "streams"
    out = []
    for st in data["result"]:
        for ts, line in st["values"]:
            assert isinstance(ts, str)
            out.append((int(ts), line, st["stream"]))
    return sorted(out, key=lambda e: e[0])


def test_streams_response_shape(loki: str) -> None:
    data = ok(qr(loki, '{app="checkout"}', limit=2))
    assert set(data) == {"resultType", "result", "stats"}
    assert data["resultType"] == "streams"
    (stream,) = data["result"]
    assert stream["stream"] == {
        "app": "checkout",
        "container": "checkout",
        "namespace": "otel-demo",
        "pod": "checkout-5c4-xyz12",
    }
    assert [v[0] for v in stream["values"]] == [str((T0 + 585) * S), str((T0 + 565) * S)]
    assert data["stats"]["summary"]["totalEntriesReturned"] == 2
    assert "querier" in data["stats"] and "ingester" in data["stats"]


def test_stream_selector_operators(loki: str) -> None:
    def apps(q: str) -> set[str]:
        return {e[2]["app"] for e in entries(qr(loki, q, limit=1000))}

    assert apps('{namespace="otel-demo"}') == {"cart", "checkout"}
    assert apps('{namespace!="otel-demo", app=~"pro.*"}') == {"proxy"}
    assert apps('{app=~"c.*"}') == {"cart", "checkout"}
    assert apps('{namespace="otel-demo", app!~"ca.*"}') == {"checkout"}
    assert apps('{app="nope"}') == set()


def test_line_filters(loki: str) -> None:
    def count(q: str) -> int:
        return len(entries(qr(loki, q, limit=1000)))

    assert count('{app="cart"} |= "connection refused"') == 12
    assert count('{app="cart"} != "connection refused"') == 48
    assert count('{app="cart"} |~ "GetCart request [0-9]{2} failed"') == 10
    assert count('{app="checkout"} !~ "level=info"') == 3
    assert count('{app="cart"} |= "failed" != "request 5 "') == 11  # chained
    assert count('{app="checkout"} |= "latency=1ms" or "latency=2ms"') == 2
    assert count('{app="cart"} |~ `(?i)CONNECTION refused`') == 12  # backquoted raw string


def test_json_parser_flattens_nested_keys(loki: str) -> None:
    got = entries(qr(loki, '{app="cart"} | json | level="error"', limit=1000))
    assert len(got) == 12
    labels = got[0][2]
    assert labels["http_method"] == "GET" and labels["http_route"] == "/api/cart"
    assert labels["status"] == "500" and labels["app"] == "cart"
    assert "__error__" not in labels


def test_json_parser_with_expressions(loki: str) -> None:
    got = entries(qr(loki, '{app="cart"} | json method="http.method", route="http[\\"route\\"]"', limit=3))
    assert {e[2]["route"] for e in got} == {"/api/cart"}
    assert {e[2]["method"] for e in got} <= {"GET", "POST"}
    assert "level" not in got[0][2]  # only the named expressions are extracted


def test_json_parser_errors_are_labelled_and_filterable(loki: str) -> None:
    got = entries(qr(loki, '{app="checkout"} | json', limit=1000))
    assert len(got) == 30
    assert {e[2]["__error__"] for e in got} == {"JSONParserErr"}
    assert entries(qr(loki, '{app="checkout"} | json | __error__=""', limit=1000)) == []
    assert (
        len(entries(qr(loki, '{namespace="otel-demo"} | json | __error__!="JSONParserErr"', limit=1000)))
        == 60
    )


def test_logfmt_parser_and_duration_filter(loki: str) -> None:
    errs = entries(qr(loki, '{app="checkout"} | logfmt | level="error"', limit=1000))
    assert len(errs) == 3
    assert errs[0][2]["msg"] == "failed to charge card: context deadline exceeded"
    slow = entries(qr(loki, '{app="checkout"} | logfmt | latency > 25ms', limit=1000))
    assert sorted(e[2]["latency"] for e in slow) == sorted(["26ms", "27ms", "28ms", "29ms", "100ms", "200ms"])


def test_regexp_parser_named_groups(loki: str) -> None:
    q = '{app="proxy"} | regexp `"(?P<method>\\w+) (?P<path>\\S+) HTTP/1.1" (?P<status>\\d+)` | status="404"'
    got = entries(qr(loki, q, limit=1000))
    assert len(got) == 5
    assert got[0][2]["method"] == "GET" and got[0][2]["path"] == "/api/products/0"


def test_pattern_parser(loki: str) -> None:
    q = '{app="proxy"} | pattern `<ip> - - [<_>] "<method> <uri> <_>" <status> <size>` | status == 404'
    got = entries(qr(loki, q, limit=1000))
    assert len(got) == 5
    first = got[0][2]
    assert first["ip"] == "10.0.0.0" and first["uri"] == "/api/products/0" and first["size"] == "100"
    assert "_" not in first


def test_label_filters_numbers_durations_bytes_and_boolean_logic(loki: str) -> None:
    def count(q: str) -> int:
        return len(entries(qr(loki, q, limit=1000)))

    assert count('{app="cart"} | json | status >= 500') == 12
    assert count('{app="cart"} | json | status == 200') == 48
    assert count('{app="cart"} | json | duration > 500ms') == 16
    assert count('{app="cart"} | json | size > 50KB') == 9
    assert count('{app="cart"} | json | level="error" and status=500') == 12
    assert count('{app="cart"} | json | level="error" or duration >= 605ms') == 18
    assert count('{app="cart"} | json | level="info", http_method="GET"') == 24
    assert count('{app="cart"} | json | level="info" http_method="GET"') == 24  # juxtaposition is "and"
    assert count('{app="cart"} | json | (level="error" or status=200) and http_method=~"P.*"') == 30
    assert count('{app="cart"} | json | level!~"err.*"') == 48


def test_numeric_filter_on_text_sets_label_filter_error(loki: str) -> None:
    got = entries(qr(loki, '{app="cart"} | json | msg > 5', limit=1000))
    assert len(got) == 60
    assert {e[2]["__error__"] for e in got} == {"LabelFilterErr"}


def test_line_format_with_pipes_and_label_format(loki: str) -> None:
    q = '{app="cart"} | json | level="error" | line_format "{{.http_method}} {{.status}} {{ .level | ToUpper }}"'
    got = entries(qr(loki, q, limit=1000, direction="forward"))
    assert [e[1] for e in got[:2]] == ["GET 500 ERROR", "POST 500 ERROR"]
    q = '{app="cart"} | json | label_format lvl=level, code="{{.status}}-{{.http_method | lower}}"'
    labels = entries(qr(loki, q, limit=1))[0][2]
    assert "level" not in labels
    assert labels["lvl"] == "info" and labels["code"] == "200-post"


def test_line_format_template_conditionals(loki: str) -> None:
    q = '{app="cart"} | json | line_format `{{if eq .level "error"}}E{{else}}I{{end}}:{{.status}}`'
    got = entries(qr(loki, q, limit=5, direction="forward"))
    assert [e[1] for e in got] == ["E:500", "I:200", "I:200", "I:200", "I:200"]


def test_drop_and_keep(loki: str) -> None:
    labels = entries(qr(loki, '{app="cart"} | json | keep app, level', limit=1))[0][2]
    assert labels == {"app": "cart", "level": "info"}
    labels = entries(
        qr(loki, '{app="cart"} | json | drop msg, size, duration, http_route, level="info"', limit=1)
    )[0][2]
    assert set(labels) == {"app", "container", "namespace", "pod", "status", "http_method"}


def test_limit_and_direction_across_streams(loki: str) -> None:
    back = entries(qr(loki, '{namespace="otel-demo"}', limit=5))
    assert [e[0] // S - T0 for e in back] == [565, 570, 580, 585, 590]
    data = ok(qr(loki, '{namespace="otel-demo"}', limit=5))
    for st in data["result"]:  # backward: newest first inside each stream
        ts = [int(v[0]) for v in st["values"]]
        assert ts == sorted(ts, reverse=True)
    fwd = ok(qr(loki, '{namespace="otel-demo"}', limit=3, direction="FORWARD"))
    got = sorted(int(v[0]) // S - T0 for st in fwd["result"] for v in st["values"])
    assert got == [0, 5, 10]
    for st in fwd["result"]:
        ts = [int(v[0]) for v in st["values"]]
        assert ts == sorted(ts)
    assert len(entries(qr(loki, '{namespace="otel-demo"}'))) == 90  # default limit 100 > 90 lines


def test_default_limit_is_100(loki: str) -> None:
    assert len(entries(qr(loki, '{namespace=~".+"}'))) == 100


def test_time_parameters_in_every_format(loki: str) -> None:
    rfc = dt.datetime.fromtimestamp(T0 + 200, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for start in (str(T0 + 100), str((T0 + 100) * S), f"{T0 + 100}.0"):
        got = entries(qr(loki, '{app="cart"}', start=start, end=rfc, limit=1000))
        assert [e[0] // S - T0 for e in got] == list(range(100, 200, 10)), start
    since = entries(qr(loki, '{app="cart"}', since="1m", limit=1000))
    assert [e[0] // S - T0 for e in since] == [540, 550, 560, 570, 580, 590]


def test_post_form_body(loki: str) -> None:
    r = requests.post(
        f"{loki}/loki/api/v1/query_range", data={"query": '{app="checkout"}', "limit": "1"}, timeout=10
    )
    assert ok(r)["result"][0]["values"][0][0] == str((T0 + 585) * S)


def test_queries_sync_the_twin_first(loki: str, host: FixtureHost) -> None:
    before = host.syncs
    qr(loki, '{app="cart"}', limit=1)
    assert host.syncs > before


def test_answers_are_deterministic(loki: str) -> None:
    q = 'sum by (level) (count_over_time({app="cart"} | json [1m]))'
    a = qr(loki, q, start=T0, end=NOW, step=30).content
    b = qr(loki, q, start=T0, end=NOW, step=30).content
    assert a == b
