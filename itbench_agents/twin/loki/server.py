"""Loki's HTTP query API over a twin's :class:`LogSource`.

Endpoints: ``/loki/api/v1/query_range``, ``/query``, ``/labels``, ``/label/<name>/values``,
``/series``, ``/ready`` and ``/loki/api/v1/status/buildinfo``. Answers use Loki's JSON shapes
(``resultType`` streams | matrix | vector | scalar with a ``stats`` object); bad input gets a 400
with Loki's plain-text message (``parse error at line 1, col 9: syntax error: ...``).
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..httpserver import Handler, Request, Response
from ..prometheus.values import fmt_float
from ..telemetry.sources import LogSource, LogStream, Matcher
from .logql import (
    Engine,
    Limits,
    MetricResult,
    QueryError,
    QueryTimeout,
    Scalar,
    Stats,
    StreamsResult,
    select_streams,
)
from .nodes import BinOp, LabelReplace, LogQuery, RangeAgg, VectorAgg
from .parser import LogQLParseError, parse_logql, parse_selector
from .units import go_duration_string, parse_prom_duration

DEFAULT_LIMIT = 100
MAX_ENTRIES_LIMIT = 5000  # limits_config.max_entries_limit_per_query
MAX_POINTS = 11000
MAX_QUERY_LENGTH_NS = 721 * 3600 * 10**9  # limits_config.max_query_length (30d1h)
DEFAULT_SINCE_NS = 3600 * 10**9
NS = 1_000_000_000
BUILD_INFO = {
    "version": "3.4.2",
    "revision": "twin",
    "branch": "HEAD",
    "buildUser": "itbench-agents",
    "buildDate": "",
    "goVersion": "go1.24.1",
}


class LogsHost(Protocol):
    """What the handler needs from a twin."""

    logs: LogSource | None
    lock: Any

    def now(self) -> float: ...

    def sync(self) -> None: ...


class _EmptyLogs:
    """Stands in while a twin has no log source installed."""

    def streams(self, matchers: Sequence[Matcher], start_ns: int, end_ns: int) -> list[LogStream]:
        return []

    def label_names(self, start_ns: int, end_ns: int) -> list[str]:
        return []

    def label_values(self, name: str, start_ns: int, end_ns: int) -> list[str]:
        return []


class BadRequest(Exception):
    pass


# ----------------------------------------------------------------------------- parameter parsing
def parse_timestamp(value: str | None, default: int) -> int:
    """Loki's ``ParseTimestamp``: float seconds, integer seconds (<= 10 digits) or ns, or RFC3339."""
    if value is None or value == "":
        return default
    if "." in value:
        try:
            f = float(value)
            if math.isfinite(f):
                s, frac = divmod(f, 1.0)
                return _check_range(int(s) * NS + int(round(frac * 1000)) * 1_000_000, value)
        except ValueError:
            pass
    try:
        n = int(value, 10)
    except ValueError:
        return _check_range(_parse_rfc3339(value), value)
    if not -(2**63) <= n < 2**63:
        raise BadRequest(f'strconv.ParseInt: parsing "{value}": value out of range')
    return _check_range(n * NS if len(value) <= 10 else n, value)


def _check_range(ns: int, value: str) -> int:
    if not -(2**62) <= ns < 2**62:  # leaves int64 headroom for ranges and steps
        raise BadRequest(f'parsing time "{value}": time out of range')
    return ns


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def _parse_rfc3339(value: str) -> int:
    import calendar

    m = _RFC3339.fullmatch(value)
    if not m:
        raise BadRequest(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    try:
        import datetime as _dt

        _dt.datetime(y, mo, d, h, mi, min(s, 59))
    except ValueError:
        raise BadRequest(f'parsing time "{value}": day out of range') from None
    secs = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    frac = int((m.group(7) or "0").ljust(9, "0"))
    if m.group(9):
        off = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        secs -= off if m.group(9) == "+" else -off
    return secs * NS + frac


def parse_duration_or_seconds(value: str, name: str) -> int:
    """Loki's ``parseSecondsOrDuration``: ``15``, ``0.5`` or ``1m``; returns ns."""
    try:
        f = float(value)
    except ValueError:
        try:
            return parse_prom_duration(value)
        except ValueError:
            raise BadRequest(f'cannot parse "{value}" to a valid duration') from None
    if not math.isfinite(f) or abs(f) > 1e12:
        raise BadRequest(f'cannot parse "{value}" to a valid duration')
    return int(f * NS)


def _limit(value: str | None) -> int:
    if value is None or value == "":
        return DEFAULT_LIMIT
    try:
        n = int(value, 10)
    except ValueError:
        raise BadRequest(f'strconv.ParseUint: parsing "{value}": invalid syntax') from None
    if n <= 0:
        raise BadRequest("limit must be a positive value")
    if n > MAX_ENTRIES_LIMIT:
        raise BadRequest(
            f"max entries limit per query exceeded, limit > max_entries_limit_per_query ({n} > {MAX_ENTRIES_LIMIT})"
        )
    return n


def _direction(value: str | None) -> str:
    if value is None or value == "":
        return "backward"
    v = value.lower()
    if v not in ("backward", "forward"):
        raise BadRequest(f"invalid direction '{value}'")
    return v


# ----------------------------------------------------------------------------- rendering
def _ts_seconds(ts_ns: int) -> int | float:
    ms = ts_ns // 1_000_000
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def stats_json(st: Stats) -> dict[str, Any]:
    store = {
        "totalChunksRef": 0,
        "totalChunksDownloaded": 0,
        "chunksDownloadTime": 0,
        "queryReferencedStructuredMetadata": False,
        "chunk": {
            "headChunkBytes": 0,
            "headChunkLines": 0,
            "decompressedBytes": st.bytes,
            "decompressedLines": st.lines,
            "compressedBytes": 0,
            "totalDuplicates": 0,
            "postFilterLines": st.post_filter_lines,
            "headChunkStructuredMetadataBytes": 0,
            "decompressedStructuredMetadataBytes": 0,
        },
    }
    return {
        "summary": {
            "bytesProcessedPerSecond": 0,
            "linesProcessedPerSecond": 0,
            "totalBytesProcessed": st.bytes,
            "totalLinesProcessed": st.lines,
            "execTime": 0,
            "queueTime": 0,
            "subqueries": 0,
            "totalEntriesReturned": st.returned,
            "splits": 0,
            "shards": 0,
            "totalPostFilterLines": st.post_filter_lines,
            "totalStructuredMetadataBytesProcessed": 0,
        },
        "querier": {"store": store},
        "ingester": {
            "totalReached": 0,
            "totalChunksMatched": 0,
            "totalBatches": 0,
            "totalLinesSent": 0,
            "store": store,
        },
        "cache": {},
    }


def streams_json(res: StreamsResult, direction: str) -> dict[str, Any]:
    result = []
    for st in res.streams:
        entries = sorted(st.entries, key=lambda e: e[0], reverse=direction == "backward")
        result.append(
            {"stream": dict(sorted(st.labels.items())), "values": [[str(ts), line] for ts, line in entries]}
        )
    return {"resultType": "streams", "result": result, "stats": stats_json(res.stats)}


def matrix_json(res: MetricResult, instant: bool) -> dict[str, Any]:
    steps = [int(t) for t in res.steps_ns]
    if isinstance(res.value, Scalar):
        if instant:
            return {
                "resultType": "scalar",
                "result": [_ts_seconds(steps[0]), fmt_float(float(res.value.values[0]))],
                "stats": stats_json(res.stats),
            }
        series_list: list[tuple[dict[str, str], np.ndarray, np.ndarray]] = [
            ({}, res.value.values, np.ones(len(steps), bool))
        ]
    else:
        series_list = [(s.labels, s.values, s.present) for s in res.value.series]
    if instant:
        vector: list[dict[str, Any]] = [
            {
                "metric": dict(sorted(labels.items())),
                "value": [_ts_seconds(steps[0]), fmt_float(float(vals[0]))],
            }
            for labels, vals, pres in series_list
            if pres[0]
        ]
        vector.sort(key=lambda r: sorted(r["metric"].items()))
        return {"resultType": "vector", "result": vector, "stats": stats_json(res.stats)}
    matrix: list[dict[str, Any]] = []
    for labels, vals, pres in series_list:
        points = [[_ts_seconds(steps[i]), fmt_float(float(vals[i]))] for i in np.nonzero(pres)[0]]
        if points:
            matrix.append({"metric": dict(sorted(labels.items())), "values": points})
    matrix.sort(key=lambda r: sorted(r["metric"].items()))
    return {"resultType": "matrix", "result": matrix, "stats": stats_json(res.stats)}


def _arg(form: dict[str, list[str]], name: str) -> str | None:
    vals = form.get(name)
    return vals[-1] if vals else None


def _ok(data: Any) -> Response:
    return Response.json({"status": "success", "data": data})


def _bad(msg: str, status: int = 400) -> Response:
    return Response.text(msg + "\n" if not msg.endswith("\n") else msg, status)


# ----------------------------------------------------------------------------- handler
class LokiApi:
    def __init__(self, host: LogsHost, limits: Limits | None = None) -> None:
        self.host = host
        self.limits = limits or Limits()

    @property
    def source(self) -> LogSource:
        """The twin's logs, each call under the twin's lock: queries evaluate without holding it
        (a heavy LogQL query must not stall the Kubernetes API, which takes the same lock)."""
        base = self.host.logs or _EmptyLogs()
        lock = getattr(self.host, "lock", None)
        return _LockedLogs(base, lock) if lock is not None else base  # type: ignore[return-value]

    def _now_ns(self) -> int:
        with contextlib.suppress(Exception):
            self.host.sync()
        return int(round(self.host.now() * 1000)) * 1_000_000

    def _bounds(self, form: dict[str, list[str]]) -> tuple[int, int]:
        end = parse_timestamp(_arg(form, "end"), self._now_ns())
        since = DEFAULT_SINCE_NS
        if _arg(form, "since"):
            try:
                since = parse_prom_duration(_arg(form, "since") or "")
            except ValueError as exc:
                raise BadRequest(str(exc)) from None
        start = parse_timestamp(_arg(form, "start"), end - since)
        if end < start:
            raise BadRequest("end timestamp must not be before or equal to start time")
        return start, end

    def __call__(self, req: Request) -> Response:
        path = req.path.rstrip("/") or "/"
        if req.method not in ("GET", "POST", "HEAD"):
            return _bad("method not allowed", 405)
        try:
            if path == "/ready":
                return Response.text("ready\n")
            if path == "/loki/api/v1/status/buildinfo":
                return Response.json(BUILD_INFO)
            form = req.form()
            if path == "/loki/api/v1/query_range":
                return self.query_range(form)
            if path == "/loki/api/v1/query":
                return self.query(form)
            if path == "/loki/api/v1/labels":
                return self.labels(form)
            if path.startswith("/loki/api/v1/label/") and path.endswith("/values"):
                name = path[len("/loki/api/v1/label/") : -len("/values")]
                return self.label_values(name, form)
            if path == "/loki/api/v1/series":
                return self.series(form)
            if path == "/loki/api/v1/index/stats":
                return self.index_stats(form)
        except LogQLParseError as exc:
            return _bad(str(exc))
        except QueryTimeout as exc:
            return _bad(str(exc), 504)
        except (BadRequest, QueryError) as exc:
            return _bad(str(exc))
        return Response.text("404 page not found\n", 404)

    def query_range(self, form: dict[str, list[str]]) -> Response:
        q = _arg(form, "query") or ""
        expr = parse_logql(q)
        start, end = self._bounds(form)
        limit = _limit(_arg(form, "limit"))
        direction = _direction(_arg(form, "direction"))
        if end - start > MAX_QUERY_LENGTH_NS:
            raise BadRequest(
                f"the query time range exceeds the limit (query length: {go_duration_string(end - start)}, "
                "limit: 30d1h)"
            )
        engine = Engine(self.source, self.limits)
        if isinstance(expr, LogQuery):
            res = engine.select_logs(expr, start, end, limit, direction)  # source calls are locked
            return _ok(streams_json(res, direction))
        step_arg = _arg(form, "step")
        if step_arg:
            step = parse_duration_or_seconds(step_arg, "step")
        else:  # Loki's default: about 250 points, at least 1 s
            step = max(int((end - start) / NS / 250), 1) * NS
        if step <= 0:
            raise BadRequest(
                "zero or negative query resolution step widths are not accepted. Try a positive integer"
            )
        if (end - start) / step > MAX_POINTS:
            raise BadRequest(
                "exceeded maximum resolution of 11,000 points per time series. Try increasing the value of the "
                "step parameter"
            )
        steps = np.arange(start, end + 1, step, dtype=np.int64)
        mres = engine.eval_metric(expr, steps)  # source calls are locked
        return _ok(matrix_json(mres, instant=False))

    def query(self, form: dict[str, list[str]]) -> Response:
        q = _arg(form, "query") or ""
        expr = parse_logql(q)
        t = parse_timestamp(_arg(form, "time"), self._now_ns())
        _limit(_arg(form, "limit"))
        _direction(_arg(form, "direction"))
        if isinstance(expr, LogQuery):
            raise BadRequest(
                "log queries are not supported as an instant query type, please change your query to a range "
                "query type"
            )
        engine = Engine(self.source, self.limits)
        mres = engine.eval_metric(expr, np.asarray([t], dtype=np.int64))  # source calls are locked
        return _ok(matrix_json(mres, instant=True))

    def labels(self, form: dict[str, list[str]]) -> Response:
        start, end = self._bounds(form)
        q = _arg(form, "query") or ""
        if q:
            names: set[str] = set()
            for st in select_streams(self.source, parse_selector(q), start, end):
                names.update(st.labels)
            return _ok(sorted(names))
        return _ok(sorted(set(self.source.label_names(start, end))))

    def label_values(self, name: str, form: dict[str, list[str]]) -> Response:
        start, end = self._bounds(form)
        q = _arg(form, "query") or ""
        if q:
            vals = {
                st.labels[name]
                for st in select_streams(self.source, parse_selector(q), start, end)
                if name in st.labels
            }
            return _ok(sorted(vals))
        return _ok(sorted(set(self.source.label_values(name, start, end))))

    def series(self, form: dict[str, list[str]]) -> Response:
        start, end = self._bounds(form)
        groups = [m for m in form.get("match[]", []) + form.get("match", []) if m]
        if not groups:
            raise BadRequest("0 matcher groups supplied")
        seen: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        selectors = [parse_selector(g) for g in groups]
        for matchers in selectors:
            for st in select_streams(self.source, matchers, start, end):
                seen.setdefault(tuple(sorted(st.labels.items())), dict(st.labels))
        return _ok([seen[k] for k in sorted(seen)])

    def index_stats(self, form: dict[str, list[str]]) -> Response:
        """What Grafana asks before running a query: how much the selector would read."""
        start, end = self._bounds(form)
        q = _arg(form, "query") or ""
        expr = parse_logql(q)
        matchers = expr.matchers if isinstance(expr, LogQuery) else _first_selector(expr)
        streams = select_streams(self.source, matchers, start, end)
        entries = sum(len(st.entries) for st in streams)
        nbytes = sum(len(line) for st in streams for _, line in st.entries)
        return Response.json(
            {"streams": len(streams), "chunks": len(streams), "bytes": nbytes, "entries": entries}
        )


class _LockedLogs:
    """A LogSource whose every call runs under ``lock`` (answers are materialised lists)."""

    def __init__(self, base: Any, lock: Any) -> None:
        self.base = base
        self.lock = lock

    CHUNK_NS = 60 * 10**9
    # Python's locks are not fair: a reader that releases the lock and takes it straight back
    # starves a waiting kube request for the whole read. Every YIELD_EVERY_S of reading, the
    # reader steps aside for YIELD_S so a waiter gets the lock (about 10 % of a long read).
    YIELD_EVERY_S = 0.010
    YIELD_S = 0.001

    reads_in_chunks = True

    def streams(self, matchers: Any, start_ns: int, end_ns: int, check: Any = None) -> Any:
        """Long windows are read a minute at a time (the lock is released in between, and
        waiters get it; ``check``, the query's deadline check, runs after each minute); entries
        are the same, streams keep the order in which they first appear."""
        if end_ns - start_ns <= self.CHUNK_NS:
            with self.lock:
                return self.base.streams(matchers, start_ns, end_ns)
        merged: dict[tuple[tuple[str, str], ...], Any] = {}
        last_yield = time.monotonic()
        for a in range(start_ns, end_ns, self.CHUNK_NS):
            with self.lock:
                part = self.base.streams(matchers, a, min(end_ns, a + self.CHUNK_NS))
            if check is not None:
                check()
            if time.monotonic() - last_yield >= self.YIELD_EVERY_S:
                time.sleep(self.YIELD_S)
                last_yield = time.monotonic()
            for st in part:
                key = tuple(sorted(st.labels.items()))
                cur = merged.get(key)
                if cur is None:
                    merged[key] = type(st)(dict(st.labels), list(st.entries))
                else:
                    cur.entries.extend(st.entries)
        return list(merged.values())

    def label_names(self, start_ns: int, end_ns: int) -> Any:
        with self.lock:
            return self.base.label_names(start_ns, end_ns)

    def label_values(self, name: str, start_ns: int, end_ns: int) -> Any:
        with self.lock:
            return self.base.label_values(name, start_ns, end_ns)

    def pod_log(self, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return self.base.pod_log(*args, **kwargs)


def _first_selector(expr: object) -> tuple[Matcher, ...]:
    """The stream selector of the first log range inside a metric query."""
    if isinstance(expr, RangeAgg):
        return expr.range.log.matchers
    if isinstance(expr, VectorAgg | LabelReplace):
        return _first_selector(expr.inner)
    if isinstance(expr, BinOp):
        return _first_selector(expr.lhs) or _first_selector(expr.rhs)
    return ()


def make_loki_handler(twin: LogsHost, limits: Limits | None = None) -> Handler:
    """The Loki HTTP API of ``twin`` (anything with ``.logs``, ``.now()``, ``.sync()``, ``.lock``)."""
    return LokiApi(twin, limits)
