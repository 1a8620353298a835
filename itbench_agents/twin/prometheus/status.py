"""Prometheus' status and auxiliary endpoints, in its wire format: ``/api/v1/status/{buildinfo,
config,flags,runtimeinfo,tsdb}``, ``/api/v1/format_query``, ``/api/v1/query_exemplars`` and
``/federate`` (text exposition format). Values describe the twin: one Prometheus 3 server
scraping the app's targets every 15 s, with the twin's query limits as its flags."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Protocol

import numpy as np

from ..httpserver import Request, Response
from ..telemetry.sources import Matcher, SeriesSource
from .values import PromQLError, fmt_float, stale_mask


class PrometheusApi(Protocol):
    """What the status endpoints read of the API that serves them (``server.PrometheusApi``)."""

    twin: Any

    def source(self) -> SeriesSource: ...

    def _form(self, req: Request) -> dict[str, list[str]]: ...

    @staticmethod
    def _one(form: dict[str, list[str]], name: str) -> str | None: ...

    def _floor_ms(self) -> int | None: ...

    def _match_sets(self, form: dict[str, list[str]], required: bool) -> list[list[Matcher]]: ...

    def _up_targets(self) -> list[tuple[dict[str, str], float]]: ...


VERSION = "3.14.0"
BUILD_INFO = {
    "version": VERSION,
    "revision": "itbench-twin",
    "branch": "HEAD",
    "buildUser": "itbench-agents",
    "buildDate": "20260818-00:00:00",
    "goVersion": "go1.25.0",
}
FEATURES = (
    "promql-experimental-functions,promql-duration-expr,promql-extended-range-selectors,"
    "promql-binop-fill-modifiers"
)


def flags(api: PrometheusApi) -> dict[str, str]:
    from .api_params import DEFAULT_TIMEOUT_S, MAX_CONCURRENT_QUERIES, MAX_SAMPLES
    from .limits import MAX_QUERY_BYTES

    return {
        "config.file": "/etc/prometheus/prometheus.yml",
        "enable-feature": FEATURES,
        "log.format": "logfmt",
        "log.level": "info",
        "query.lookback-delta": "5m",
        "query.max-concurrency": str(MAX_CONCURRENT_QUERIES),
        "query.max-samples": str(MAX_SAMPLES),
        "query.timeout": f"{DEFAULT_TIMEOUT_S:g}s",
        "rules.alert.for-grace-period": "10m",
        "rules.alert.resend-delay": "1m",
        "storage.tsdb.path": "/prometheus",
        "storage.tsdb.retention.time": "15d",
        "web.enable-lifecycle": "false",
        "web.listen-address": "0.0.0.0:9090",
        "web.max-connections": "512",
        "web.read-timeout": "5m",
        "itbench.twin.max-query-bytes": str(MAX_QUERY_BYTES),
    }


def _jobs(api: PrometheusApi) -> dict[str, list[str]]:
    jobs: dict[str, list[str]] = {}
    for lb, _ in api._up_targets():
        jobs.setdefault(lb.get("job", ""), []).append(lb.get("instance", ""))
    return {j: sorted(v) for j, v in sorted(jobs.items())}


def config_yaml(api: PrometheusApi) -> str:
    lines = [
        "global:",
        "  scrape_interval: 15s",
        "  scrape_timeout: 10s",
        "  scrape_protocols:",
        "  - OpenMetricsText1.0.0",
        "  - OpenMetricsText0.0.1",
        "  - PrometheusText1.0.0",
        "  - PrometheusText0.0.4",
        "  evaluation_interval: 15s",
        "  metric_name_validation_scheme: utf8",
        "runtime:",
        "  gogc: 75",
        "rule_files:",
        "- /etc/prometheus/rules/*.yaml",
        "scrape_configs:",
    ]
    for job, targets in _jobs(api).items():
        lines += [
            f"- job_name: {job}",
            "  honor_timestamps: true",
            "  scrape_interval: 15s",
            "  scrape_timeout: 10s",
            "  metrics_path: /metrics",
            "  scheme: http",
            "  follow_redirects: true",
            "  enable_http2: true",
            "  static_configs:",
            "  - targets:",
            *[f"    - {t}" for t in targets],
        ]
    return "\n".join(lines) + "\n"


def runtimeinfo(api: PrometheusApi) -> dict[str, Any]:
    from .alerts import rfc3339

    created = float(getattr(api.twin, "created_at", 0.0) or 0.0)
    return {
        "startTime": rfc3339(created),
        "CWD": "/prometheus",
        "hostname": "prometheus-0",
        "serverTime": rfc3339(float(api.twin.now())),
        "reloadConfigSuccess": True,
        "lastConfigTime": rfc3339(created),
        "corruptionCount": 0,
        "goroutineCount": 42,
        "GOMAXPROCS": 2,
        "GOMEMLIMIT": 9223372036854775807,
        "GOGC": "75",
        "GODEBUG": "",
        "storageRetention": "15d",
    }


def tsdb(api: PrometheusApi, req: Request) -> dict[str, Any]:
    """Head-block statistics over the series that have samples in the last 2 h (the head)."""
    form = api._form(req)
    lim = api._one(form, "limit") or "10"
    try:
        limit = int(lim)
        if limit < 1:
            raise ValueError
    except ValueError:
        from .api_params import ApiError

        raise ApiError("bad_data", f"limit must be a positive number: {lim}") from None
    now_ms = int(round(float(api.twin.now()) * 1000))
    lo = now_ms - 2 * 3_600_000
    floor = api._floor_ms()
    if floor is not None:
        lo = max(lo, floor)
    series = api.source().select([Matcher("__name__", "=~", ".+")], lo, now_ms)
    by_name: Counter[str] = Counter()
    values_by_label: dict[str, set[str]] = {}
    bytes_by_label: Counter[str] = Counter()
    by_pair: Counter[str] = Counter()
    min_t, max_t, chunks = math.inf, -math.inf, 0
    for s in series:
        by_name[s.labels.get("__name__", "")] += 1
        for k, v in s.labels.items():
            if v not in values_by_label.setdefault(k, set()):
                values_by_label[k].add(v)
                bytes_by_label[k] += len(v.encode())
            by_pair[f"{k}={v}"] += 1
        if len(s.timestamps_ms):
            min_t = min(min_t, int(s.timestamps_ms[0]))
            max_t = max(max_t, int(s.timestamps_ms[-1]))
            chunks += (len(s.timestamps_ms) + 119) // 120

    def top(c: Counter[str]) -> list[dict[str, Any]]:
        return [{"name": k, "value": v} for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]

    return {
        "headStats": {
            "numSeries": len(series),
            "numLabelPairs": len(by_pair),
            "chunkCount": chunks,
            "minTime": int(min_t) if series and min_t != math.inf else 9223372036854775807,
            "maxTime": int(max_t) if series and max_t != -math.inf else -9223372036854775808,
        },
        "seriesCountByMetricName": top(by_name),
        "labelValueCountByLabelName": top(Counter({k: len(v) for k, v in values_by_label.items()})),
        "memoryInBytesByLabelName": top(bytes_by_label),
        "seriesCountByLabelValuePair": top(by_pair),
    }


def format_query(api: PrometheusApi, req: Request) -> str:
    from .api_params import with_query_prefix
    from .limits import check_query
    from .syntax import parse

    q = api._one(api._form(req), "query") or ""
    if not q.strip():
        from .api_params import ApiError

        raise ApiError(
            "bad_data", 'invalid parameter "query": 1:1: parse error: no expression found in input'
        )
    node = with_query_prefix(lambda: (check_query(q), parse(q))[1])
    return str(node.prettify())


def query_exemplars(api: PrometheusApi, req: Request) -> list[Any]:
    """The twin records no exemplars: a valid query answers an empty list, like a Prometheus
    without exemplar storage."""
    from .api_params import ApiError, parse_time, with_query_prefix
    from .limits import check_query
    from .syntax import parse

    form = api._form(req)
    q = api._one(form, "query") or ""
    s, e = api._one(form, "start"), api._one(form, "end")
    start = parse_time(s, "start") if s else -math.inf
    end = parse_time(e, "end") if e else math.inf
    if end < start:
        raise ApiError("bad_data", 'invalid parameter "end": end timestamp must not be before start time')
    if not q.strip():
        raise ApiError(
            "bad_data", 'invalid parameter "query": 1:1: parse error: no expression found in input'
        )
    with_query_prefix(lambda: (check_query(q), parse(q)))
    return []


def federate(api: PrometheusApi, req: Request) -> Response:
    """``/federate?match[]=...``: the latest sample (within the 5 m lookback) of every matched
    series, in the text exposition format with timestamps, grouped by metric name."""
    from .api_params import ApiError

    form = api._form(req)
    try:
        sets = api._match_sets(form, required=False)
    except ApiError as exc:
        return Response.text(exc.message.split(": ", 1)[-1] + "\n", 400)
    now_ms = int(round(float(api.twin.now()) * 1000))
    latest: dict[tuple[tuple[str, str], ...], tuple[dict[str, str], int, float]] = {}
    src = api.source()
    for ms in sets:
        try:
            for s in src.select(ms, now_ms - 300_000, now_ms):
                if not len(s.timestamps_ms):
                    continue
                vals = np.asarray(s.values, dtype=np.float64)
                ok = np.flatnonzero(~stale_mask(vals))
                if not len(ok) or ok[-1] != len(vals) - 1:
                    continue  # ended by a staleness marker
                i = int(ok[-1])
                key = tuple(sorted(s.labels.items()))
                latest[key] = (dict(s.labels), int(s.timestamps_ms[i]), float(vals[i]))
        except PromQLError as exc:
            return Response.text(exc.message + "\n", 400)
    by_name: dict[str, list[tuple[dict[str, str], int, float]]] = {}
    for lb, t, v in latest.values():
        by_name.setdefault(lb.get("__name__", ""), []).append((lb, t, v))
    out: list[str] = []
    for name in sorted(by_name):
        out.append(f"# TYPE {name} untyped")
        for lb, t, v in sorted(by_name[name], key=lambda r: sorted(r[0].items())):
            labels = ",".join(f'{k}="{_esc(val)}"' for k, val in sorted(lb.items()) if k != "__name__")
            out.append(f"{name}{{{labels}}} {fmt_float(v)} {t}" if labels else f"{name} {fmt_float(v)} {t}")
    body = "\n".join(out) + ("\n" if out else "")
    return Response.text(body, content_type="text/plain; version=0.0.4; charset=utf-8")


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
