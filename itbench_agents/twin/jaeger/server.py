"""Jaeger's HTTP query API (the one Jaeger UI and the agents' NL2Traces tool use) over a TraceSource.

Endpoints: ``/api/services``, ``/api/services/<svc>/operations``, ``/api/operations``,
``/api/traces`` (search), ``/api/traces/<id>``, ``/api/dependencies``. Every answer is Jaeger's
``{"data", "total", "limit", "offset", "errors"}`` envelope; bad input gets
``{"data": null, "errors": [{"code": 400, "msg": ...}]}`` with Jaeger's wording. When the twin masks
``traces`` (the paper's traces-off condition) the endpoints answer, with nothing in them.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any, Protocol
from urllib.parse import unquote

from ..httpserver import Handler, Request, Response
from ..telemetry.sources import Span, Trace, TraceQuery, TraceSource
from .query import select_traces, span_tags

DEFAULT_LIMIT = 100
DEFAULT_TRACE_LOOKBACK_US = 2 * 24 * 3600 * 1_000_000  # query.traceQueryLookbackDuration
DEFAULT_DEPENDENCY_LOOKBACK_MS = 24 * 3600 * 1000


class TracesHost(Protocol):
    traces: TraceSource | None
    masked: set[str]

    def now(self) -> float: ...


class BadRequest(Exception):
    def __init__(self, msg: str, code: int = 400) -> None:
        super().__init__(msg)
        self.msg = msg
        self.code = code


def _envelope(data: Any, total: int | None = None) -> Response:
    if total is None:
        total = len(data) if isinstance(data, list) else 0
    return Response.json({"data": data, "total": total, "limit": 0, "offset": 0, "errors": None})


def _error(code: int, msg: str) -> Response:
    return Response.json(
        {"data": None, "total": 0, "limit": 0, "offset": 0, "errors": [{"code": code, "msg": msg}]}, code
    )


# ----------------------------------------------------------------------------- parameters
def _go_int(value: str) -> int:
    try:
        n = int(value, 10)
    except ValueError:
        raise BadRequest(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None
    if not -(2**63) <= n < 2**63:
        raise BadRequest(f'strconv.ParseInt: parsing "{value}": value out of range')
    return n


def parse_go_duration_us(value: str) -> int:
    """Go ``time.ParseDuration`` in microseconds; BadRequest with Go's message."""
    from ..loki.units import parse_go_duration

    try:
        return int(round(parse_go_duration(value) * 1_000_000))
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def _lookback_us(value: str) -> int:
    from ..loki.units import parse_prom_duration

    try:
        return parse_go_duration_us(value)
    except BadRequest:
        try:
            return parse_prom_duration(value) // 1000  # the UI's "2d"
        except ValueError:
            raise BadRequest(f'cannot parse lookback: time: invalid duration "{value}"') from None


def parse_trace_id(value: str) -> int:
    if len(value) > 32:
        raise BadRequest(f"TraceID cannot be longer than 32 hex characters: {value}")
    if not value:
        raise BadRequest("TraceID cannot be empty")
    try:
        return int(value, 16)
    except ValueError:
        raise BadRequest(f'strconv.ParseUint: parsing "{value}": invalid syntax') from None


def _tags(req: Request) -> dict[str, str]:
    tags: dict[str, str] = {}
    for raw in req.query.get("tag", []):
        key, sep, val = raw.partition(":")
        if not sep:
            raise BadRequest(f"malformed 'tag' parameter, expecting key:value, received: {raw}")
        tags[key] = val
    for raw in req.query.get("tags", []):
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise BadRequest(f"malformed 'tags' parameter, cannot unmarshal JSON: {exc}") from None
        if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
            raise BadRequest(
                "malformed 'tags' parameter, cannot unmarshal JSON: json: cannot unmarshal into Go value of "
                "type map[string]string"
            )
        tags.update(obj)
    return tags


# ----------------------------------------------------------------------------- rendering
def _kv(key: str, value: str | int | float | bool) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    return {"key": key, "type": "string", "value": str(value)}


def trace_json(trace: Trace) -> dict[str, Any]:
    processes: dict[str, dict[str, Any]] = {}
    proc_ids: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}
    spans_out = []
    for span in sorted(trace.spans, key=lambda s: (s.start_us, s.span_id)):
        pkey = (span.service, tuple(sorted(span.process_tags.items())))
        pid = proc_ids.get(pkey)
        if pid is None:
            pid = proc_ids[pkey] = f"p{len(proc_ids) + 1}"
            processes[pid] = {"serviceName": span.service, "tags": [_kv(k, v) for k, v in pkey[1]]}
        spans_out.append(_span_json(span, trace.trace_id, pid))
    return {"traceID": trace.trace_id, "spans": spans_out, "processes": processes, "warnings": None}


def _span_json(span: Span, trace_id: str, pid: str) -> dict[str, Any]:
    refs = []
    if span.parent_span_id:
        refs.append({"refType": "CHILD_OF", "traceID": trace_id, "spanID": span.parent_span_id})
    return {
        "traceID": trace_id,
        "spanID": span.span_id,
        "operationName": span.operation,
        "references": refs,
        "startTime": span.start_us,
        "duration": span.duration_us,
        "tags": [_kv(k, v) for k, v in span_tags(span).items()],
        "logs": [
            {"timestamp": ts, "fields": [_kv(k, v) for k, v in fields.items()]} for ts, fields in span.logs
        ],
        "processID": pid,
        "warnings": None,
        "flags": 1,
    }


# ----------------------------------------------------------------------------- handler
class JaegerApi:
    def __init__(self, host: TracesHost) -> None:
        self.host = host

    @property
    def source(self) -> TraceSource | None:
        if "traces" in getattr(self.host, "masked", set()):
            return None
        return self.host.traces

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with contextlib.suppress(Exception):
            self.host.sync()  # type: ignore[attr-defined]
        lock = getattr(self.host, "lock", None) or threading.RLock()
        with lock:
            yield

    def _now_us(self) -> int:
        return int(self.host.now() * 1_000_000)

    def __call__(self, req: Request) -> Response:
        path = unquote(req.path.rstrip("/")) or "/"
        if req.method not in ("GET", "HEAD"):
            return _error(405, "method not allowed")
        try:
            if path == "/api/services":
                return self.services()
            if path.startswith("/api/services/") and path.endswith("/operations"):
                return self.service_operations(path[len("/api/services/") : -len("/operations")])
            if path == "/api/operations":
                return self.operations(req)
            if path == "/api/traces":
                return self.find_traces(req)
            if path.startswith("/api/traces/"):
                return self.get_trace(path[len("/api/traces/") :])
            if path == "/api/dependencies":
                return self.dependencies(req)
        except BadRequest as exc:
            return _error(exc.code, exc.msg)
        return Response.text("404 page not found\n", 404)

    def services(self) -> Response:
        src = self.source
        if src is None:
            return _envelope([])
        with self._locked():
            return _envelope(sorted(src.services()))

    def service_operations(self, service: str) -> Response:
        src = self.source
        if src is None or not service:
            return _envelope([])
        with self._locked():
            return _envelope(sorted({name for name, _ in src.operations(service)}))

    def operations(self, req: Request) -> Response:
        service = req.arg("service") or ""
        if not service:
            raise BadRequest("parameter 'service' is required")
        kind = req.arg("spanKind") or None
        src = self.source
        if src is None:
            return _envelope([])
        with self._locked():
            ops = src.operations(service, kind)
        return _envelope([{"name": n, "spanKind": k} for n, k in sorted(set(ops))])

    def _trace_query(self, req: Request) -> TraceQuery:
        service = req.arg("service") or ""
        if not service:
            raise BadRequest("parameter 'service' is required")
        now = self._now_us()
        end = _go_int(req.arg("end") or "") if req.arg("end") else now
        lookback = req.arg("lookback")
        if req.arg("start"):
            start = _go_int(req.arg("start") or "")
        elif lookback and lookback != "custom":
            start = end - _lookback_us(lookback)
        else:
            start = end - DEFAULT_TRACE_LOOKBACK_US
        min_d = max_d = None
        if req.arg("minDuration"):
            try:
                min_d = parse_go_duration_us(req.arg("minDuration") or "")
            except BadRequest as exc:
                raise BadRequest(f"cannot parse minDuration: {exc.msg}") from None
        if req.arg("maxDuration"):
            try:
                max_d = parse_go_duration_us(req.arg("maxDuration") or "")
            except BadRequest as exc:
                raise BadRequest(f"cannot parse maxDuration: {exc.msg}") from None
        if min_d is not None and max_d is not None and max_d < min_d:
            raise BadRequest("'maxDuration' should be greater than 'minDuration'")
        limit = _go_int(req.arg("limit") or "") if req.arg("limit") else DEFAULT_LIMIT
        if limit < 0:
            raise BadRequest("'limit' should be a positive number")
        return TraceQuery(
            service=service,
            operation=req.arg("operation") or None,
            tags=_tags(req),
            start_us=start,
            end_us=end,
            min_duration_us=min_d,
            max_duration_us=max_d,
            limit=limit or DEFAULT_LIMIT,
        )

    def find_traces(self, req: Request) -> Response:
        ids = [i for i in req.query.get("traceID", []) if i]
        if ids:
            parsed = [parse_trace_id(i) for i in ids]
            src = self.source
            if src is None:
                return _envelope([])
            with self._locked():
                found = [t for t in (self._lookup(src, n) for n in parsed) if t is not None]
            return _envelope([trace_json(t) for t in found])
        q = self._trace_query(req)
        src = self.source
        if src is None:
            return _envelope([])
        with self._locked():
            # The source selects; the same rules are applied again so every source answers alike.
            traces = select_traces(src.find_traces(q), q)
        return _envelope([trace_json(t) for t in traces])

    @staticmethod
    def _lookup(src: TraceSource, n: int) -> Trace | None:
        t = src.get_trace(f"{n:032x}")
        if t is None:
            t = src.get_trace(f"{n:016x}")
        return t

    def get_trace(self, raw_id: str) -> Response:
        n = parse_trace_id(raw_id)
        src = self.source
        if src is None:
            raise BadRequest("trace not found", 404)
        with self._locked():
            t = self._lookup(src, n)
        if t is None:
            raise BadRequest("trace not found", 404)
        return _envelope([trace_json(t)])

    def dependencies(self, req: Request) -> Response:
        end_ms = _go_int(req.arg("endTs") or "") if req.arg("endTs") else self._now_us() // 1000
        lookback = DEFAULT_DEPENDENCY_LOOKBACK_MS
        if req.arg("lookback"):
            try:
                lookback = _go_int(req.arg("lookback") or "")
            except BadRequest as exc:
                raise BadRequest(f"cannot parse lookback: {exc.msg}") from None
        src = self.source
        if src is None:
            return _envelope([])
        with self._locked():
            deps = src.dependencies(end_ms, lookback)
        return _envelope([{"parent": p, "child": c, "callCount": n} for p, c, n in deps])


def make_jaeger_handler(twin: TracesHost) -> Handler:
    """The Jaeger query API of ``twin`` (anything with ``.traces``, ``.masked``, ``.now()``)."""
    return JaegerApi(twin)
