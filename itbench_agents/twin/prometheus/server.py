"""The twin's Prometheus HTTP API (and the Alertmanager ``/api/v2/alerts`` listing) as a handler.

Works with any object that has ``.metrics`` (SeriesSource or None), ``.alerts`` (AlertEngine or
None), ``.now()``, ``.sync()`` and ``.lock``. Every request syncs the twin first; state is read under
``twin.lock``. Responses and errors use Prometheus' JSON envelope and status codes
(``bad_data`` 400, ``execution`` 422, ``timeout`` 503, ``not_found`` 404).
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from typing import Any

import promql_parser as pp  # noqa: E402,I001 - after local imports for readability of the API part

from ..httpserver import Handler, Request, Response
from ..telemetry.sources import Matcher, SeriesSource
from .api_params import (
    DEFAULT_TIMEOUT_S,
    MAX_CONCURRENT_QUERIES,
    MAX_SAMPLES,
    MAX_TIMEOUT_S,
    ApiError,
    error_response,
    parse_duration_param,
    parse_time,
    success,
    with_query_prefix,
)
from .engine import Engine
from .limits import MAX_FORM_BYTES, check_query
from .memstore import LockedSource, MemorySeriesSource
from .status import BUILD_INFO
from .syntax import parse, to_matchers
from .values import PromQLError, label_key, success_chunks

FLOOR_MARGIN_MS = 3_600_000


def _ms(t: float) -> int:
    return int(round(t * 1000))


class PrometheusApi:
    def __init__(self, twin: Any) -> None:
        self.twin = twin
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_QUERIES)

    # ------------------------------------------------------------------ plumbing
    def source(self) -> SeriesSource:
        """The twin's metrics plus the ``ALERTS``/``ALERTS_FOR_STATE`` series of its alert engine."""
        src = getattr(self.twin, "metrics", None)
        lock = self.twin.lock
        base: SeriesSource = LockedSource(src if src is not None else MemorySeriesSource(), lock)
        alerts = getattr(self.twin, "alerts", None)
        if alerts is None or not hasattr(alerts, "history"):
            return base
        from .alerts import AlertSeriesSource
        from .memstore import CompositeSource

        return CompositeSource(base, LockedSource(AlertSeriesSource(alerts, self.twin.now), lock))

    def __call__(self, req: Request) -> Response:
        try:
            return self.dispatch(req)
        except ApiError as exc:
            return error_response(exc.error_type, exc.message)
        except PromQLError as exc:
            return error_response(exc.error_type, exc.message)
        except RecursionError:
            return error_response("execution", "query too deeply nested")
        except OverflowError as exc:
            return error_response("execution", f"value out of range: {exc}")
        except MemoryError:
            return error_response("execution", "query processing would load too many samples into memory")

    def dispatch(self, req: Request) -> Response:
        path = req.path.rstrip("/") or "/"
        if path == "/-/ready":
            return Response.text("Prometheus Server is Ready.\n")
        if path == "/-/healthy":
            return Response.text("Prometheus Server is Healthy.\n")
        if path == "/":
            return Response(302, b"", {"Location": "/graph", "Content-Type": "text/html; charset=utf-8"})
        if path == "/graph":
            return Response.text(
                "<!doctype html><title>Prometheus Time Series Collection and Processing Server</title>",
                content_type="text/html; charset=utf-8",
            )
        routes = {
            "/api/v1/query": self.query,
            "/api/v1/query_range": self.query_range,
            "/api/v1/series": self.series,
            "/api/v1/labels": self.labels,
            "/api/v1/metadata": self.metadata,
            "/api/v1/rules": self.rules,
            "/api/v1/alerts": self.alerts,
            "/api/v1/status/buildinfo": self.buildinfo,
            "/api/v1/status/config": self.status_config,
            "/api/v1/status/flags": self.status_flags,
            "/api/v1/status/runtimeinfo": self.status_runtimeinfo,
            "/api/v1/status/tsdb": self.status_tsdb,
            "/api/v1/format_query": self.format_query,
            "/api/v1/query_exemplars": self.query_exemplars,
            "/federate": self.federate,
            "/api/v1/targets": self.targets,
            "/api/v1/targets/metadata": self.targets_metadata,
            "/api/v2/alerts": self.am_alerts,
            "/api/v2/status": self.am_status,
        }
        fn = routes.get(path)
        m = re.fullmatch(r"/api/v1/label/([^/]+)/values", path)
        if fn is None and m is None:
            return Response.text("404 page not found\n", 404)
        post_ok = path in (
            "/api/v1/query",
            "/api/v1/query_range",
            "/api/v1/series",
            "/api/v1/labels",
            "/api/v1/format_query",
            "/api/v1/query_exemplars",
        )
        if req.method not in ("GET", "HEAD") and not (req.method == "POST" and post_ok):
            return Response.text("Method Not Allowed\n", 405)
        if len(req.body) > MAX_FORM_BYTES:  # Go's ParseForm refuses bodies over 10 MiB
            raise ApiError("bad_data", "error parsing form values: http: POST too large")
        self.twin.sync()
        if m is not None:
            return self.label_values(req, m.group(1))
        assert fn is not None
        return fn(req)

    def _form(self, req: Request) -> dict[str, list[str]]:
        return req.form()

    @staticmethod
    def _one(form: dict[str, list[str]], name: str) -> str | None:
        vals = form.get(name)
        return vals[0] if vals else None

    def _timeout(self, form: dict[str, list[str]]) -> float:
        t = self._one(form, "timeout")
        if not t:
            return DEFAULT_TIMEOUT_S
        return max(0.001, min(MAX_TIMEOUT_S, parse_duration_param(t, "timeout")))

    def _floor_ms(self) -> int | None:
        """The earliest time the twin's series can have samples: when the twin was created (less a
        margin). Selects that reach further back (``start=0``, ``rate(x[10y])``) are clipped to it
        instead of rendering empty scrape grids back to 1970."""
        created = getattr(self.twin, "created_at", None)
        if created is None:
            return None
        return _ms(float(created)) - FLOOR_MARGIN_MS

    def _engine(self, form: dict[str, list[str]]) -> Engine:
        lookback = self._one(form, "lookback_delta")
        lb_ms = 300_000
        if lookback:
            lb_ms = _ms(parse_duration_param(lookback, "lookback_delta")) or 300_000
        return Engine(
            self.source(),
            timeout_s=self._timeout(form),
            lookback_ms=lb_ms,
            max_samples=MAX_SAMPLES,
            floor_ms=self._floor_ms(),
            yield_lock=self.twin.lock,
        )

    def _queued(self, engine: Engine, run: Any, query: str) -> Any:
        """Run an evaluation with at most :data:`MAX_CONCURRENT_QUERIES` at a time (Prometheus'
        ``--query.max-concurrency``); waiting in the queue counts against the query's timeout."""
        with_query_prefix(lambda: check_query(query))  # limits refuse at once, without queueing
        t0 = time.monotonic()
        budget = engine.timeout_s
        if not self._slots.acquire(timeout=budget if budget else None):
            raise PromQLError("query timed out in query queue", "timeout")
        try:
            if budget:
                engine.timeout_s = max(0.001, budget - (time.monotonic() - t0))
            return run()
        finally:
            self._slots.release()

    # ------------------------------------------------------------------ queries
    def query(self, req: Request) -> Response:
        form = self._form(req)
        q = self._one(form, "query") or ""
        ts = self._one(form, "time")
        t = parse_time(ts, "time") if ts else float(self.twin.now())
        engine = self._engine(form)
        if not q.strip():
            raise ApiError(
                "bad_data", 'invalid parameter "query": 1:1: parse error: no expression found in input'
            )
        # no twin.lock here: the source takes it around each (per-metric) data fetch only
        res = self._queued(engine, lambda: with_query_prefix(lambda: engine.instant(q, _ms(t))), q)
        return Response(200, success_chunks(res, engine.deadline), {"Content-Type": "application/json"})

    def query_range(self, req: Request) -> Response:
        form = self._form(req)
        q = self._one(form, "query") or ""
        s, e, st = self._one(form, "start"), self._one(form, "end"), self._one(form, "step")
        if s is None:
            raise ApiError("bad_data", 'invalid parameter "start": cannot parse "" to a valid timestamp')
        start = parse_time(s, "start")
        if e is None:
            raise ApiError("bad_data", 'invalid parameter "end": cannot parse "" to a valid timestamp')
        end = parse_time(e, "end")
        if end < start:
            raise ApiError("bad_data", 'invalid parameter "end": end timestamp must not be before start time')
        if st is None:
            raise ApiError("bad_data", 'invalid parameter "step": cannot parse "" to a valid duration')
        step = parse_duration_param(st, "step")
        if step <= 0:
            raise ApiError(
                "bad_data",
                'invalid parameter "step": zero or negative query resolution step widths are not accepted. '
                "Try a positive integer",
            )
        if (end - start) / step > 11000:
            raise ApiError(
                "bad_data",
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                "resolution (?step=XX)",
            )
        engine = self._engine(form)
        if not q.strip():
            raise ApiError(
                "bad_data", 'invalid parameter "query": 1:1: parse error: no expression found in input'
            )
        res = self._queued(
            engine,
            lambda: with_query_prefix(lambda: engine.range(q, _ms(start), _ms(end), max(1, _ms(step)))),
            q,
        )
        return Response(200, success_chunks(res, engine.deadline), {"Content-Type": "application/json"})

    # ------------------------------------------------------------------ metadata
    def _range(self, form: dict[str, list[str]]) -> tuple[int, int]:
        """``start``/``end`` of the metadata endpoints; defaults: all history up to the twin's now."""
        s, e = self._one(form, "start"), self._one(form, "end")
        end = parse_time(e, "end") if e else float(self.twin.now())
        start = parse_time(s, "start") if s else -1e12
        if end < start:
            raise ApiError("bad_data", 'invalid parameter "end": end timestamp must not be before start time')
        lo, hi = _ms(max(start, -9e12)), _ms(min(end, 9e12))
        floor = self._floor_ms()
        if floor is not None and lo < floor:
            lo = min(floor, hi)
        return lo, hi

    def _match_sets(self, form: dict[str, list[str]], required: bool) -> list[list[Matcher]]:
        raw = form.get("match[]", [])
        if required and not raw:
            raise ApiError("bad_data", "no match[] parameter provided")
        sets: list[list[Matcher]] = []
        for sel in raw:
            try:
                check_query(sel)
                node = parse(sel)
            except PromQLError as exc:
                raise ApiError(
                    "bad_data", f'invalid parameter "match[]": {exc.message.split(": ", 1)[-1]}'
                ) from None
            if not isinstance(node, pp.VectorSelector):
                raise ApiError(
                    "bad_data",
                    f'invalid parameter "match[]": 1:1: parse error: unexpected expression {sel!r}',
                )
            sets.extend(to_matchers(node))
        return sets

    def series(self, req: Request) -> Response:
        form = self._form(req)
        sets = self._match_sets(form, required=True)
        lo, hi = self._range(form)
        seen: dict[Any, dict[str, str]] = {}
        src = self.source()  # locked per fetch
        for ms in sets:
            for s in src.select(ms, lo, hi):
                seen.setdefault(label_key(s.labels), dict(s.labels))
        data = sorted(seen.values(), key=lambda lb: sorted(lb.items()))
        return success(_limit(data, form))

    def labels(self, req: Request) -> Response:
        form = self._form(req)
        sets = self._match_sets(form, required=False)
        lo, hi = self._range(form)
        names: set[str] = set()
        with self.twin.lock:
            src = self.source()
            if not sets:
                names.update(src.label_names(lo, hi))
            for ms in sets:
                names.update(src.label_names(lo, hi, ms))
        return success(_limit(sorted(names), form))

    def label_values(self, req: Request, name: str) -> Response:
        from urllib.parse import unquote

        name = unquote(name)
        if name.startswith("U__"):
            name = _decode_u(name)
        if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
            raise ApiError("bad_data", f'invalid label name: "{name}"')
        form = self._form(req)
        sets = self._match_sets(form, required=False)
        lo, hi = self._range(form)
        vals: set[str] = set()
        with self.twin.lock:
            src = self.source()
            if not sets:
                vals.update(src.label_values(name, lo, hi))
            for ms in sets:
                vals.update(src.label_values(name, lo, hi, ms))
        return success(_limit(sorted(vals), form))

    def metadata(self, req: Request) -> Response:
        form = self._form(req)
        metric = self._one(form, "metric")
        with self.twin.lock:
            meta = self.source().metadata()
        data = {
            name: [{"type": m.type, "help": m.help, "unit": m.unit}]
            for name, m in sorted(meta.items())
            if metric is None or name == metric
        }
        lim = self._one(form, "limit")
        if lim:
            try:
                n = int(lim)
            except ValueError:
                raise ApiError("bad_data", "limit must be a number") from None
            if n > 0:
                data = dict(list(data.items())[:n])
        return success(data)

    # ------------------------------------------------------------------ alerting
    def _alert_engine(self) -> Any:
        return getattr(self.twin, "alerts", None)

    def rules(self, req: Request) -> Response:
        engine = self._alert_engine()
        form = self._form(req)
        kind = self._one(form, "type")
        if kind not in (None, "", "alert", "record"):
            raise ApiError("bad_data", f'invalid parameter "type": not supported value "{kind}"')
        names = set(form.get("rule_name[]", [])) or None
        groups = engine.rules(float(self.twin.now()), names) if engine is not None else []
        if kind == "record":
            groups = [{**g, "rules": []} for g in groups]
        if names:
            groups = [{**g, "rules": [r for r in g["rules"] if r["name"] in names]} for g in groups]
            groups = [g for g in groups if g["rules"]]
        return success({"groups": groups})

    def alerts(self, req: Request) -> Response:
        from .alerts import alert_json

        engine = self._alert_engine()
        alerts = engine.active(float(self.twin.now())) if engine is not None else []
        render = getattr(engine, "alert_json", alert_json)  # a recording's own (replay.py)
        return success({"alerts": [render(a) for a in alerts]})

    def am_alerts(self, req: Request) -> Response:
        from .alerts import rfc3339

        engine = self._alert_engine()
        now = float(self.twin.now())
        firing = engine.firing(now) if engine is not None else []
        out: list[dict[str, Any]] = []
        for a in firing:
            fp = hashlib.sha256(repr(sorted(a.labels.items())).encode()).hexdigest()[:16]
            out.append(
                {
                    "annotations": dict(a.annotations),
                    "endsAt": rfc3339(now + 4 * 60),
                    "fingerprint": fp,
                    "receivers": [{"name": "default"}],
                    "startsAt": rfc3339(a.fired_at if a.fired_at is not None else a.active_at),
                    "status": {"inhibitedBy": [], "silencedBy": [], "state": "active"},
                    "updatedAt": rfc3339(now),
                    "generatorURL": f"/graph?g0.expr={a.name}",
                    "labels": dict(a.labels),
                }
            )
        filters = req.query.get("filter", [])
        for f in filters:
            m = re.fullmatch(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"?([^"]*)"?\s*', f.strip("{}"))
            if m is None:
                return Response.json({"code": 400, "message": f"bad matcher format: {f}"}, 400)
            mt = Matcher(m.group(1), m.group(2), m.group(3))  # type: ignore[arg-type]
            out = [a for a in out if mt.matches(dict(a["labels"]))]
        return Response.json(out)

    def am_status(self, req: Request) -> Response:
        return Response.json(
            {
                "cluster": {"name": "twin", "peers": [], "status": "ready"},
                "config": {"original": "route:\n  receiver: default\nreceivers:\n- name: default\n"},
                "uptime": "1970-01-01T00:00:00Z",
                "versionInfo": {"version": "0.25.0"},
            }
        )

    def _up_targets(self) -> list[tuple[dict[str, str], float]]:
        """(labels, value) of the ``up`` series at the twin's now: the scrape targets."""
        now_ms = _ms(float(self.twin.now()))
        res = Engine(self.source(), floor_ms=self._floor_ms()).instant("up", now_ms)
        return [({k: v for k, v in lb.items() if k != "__name__"}, v) for lb, _, v in res.vector]

    def targets(self, req: Request) -> Response:
        from .alerts import rfc3339

        form = self._form(req)
        state = self._one(form, "state") or "any"
        now = float(self.twin.now())
        active = []
        for lb, v in self._up_targets():
            job, inst = lb.get("job", ""), lb.get("instance", "")
            active.append(
                {
                    "discoveredLabels": {
                        "__address__": inst,
                        "__scheme__": "http",
                        "__metrics_path__": "/metrics",
                        "job": job,
                    },
                    "labels": lb,
                    "scrapePool": job,
                    "scrapeUrl": f"http://{inst}/metrics",
                    "globalUrl": f"http://{inst}/metrics",
                    "lastError": "" if v == 1 else "connection refused",
                    "lastScrape": rfc3339(math.floor(now / 15) * 15),
                    "lastScrapeDuration": 0.01,
                    "health": "up" if v == 1 else "down",
                    "scrapeInterval": "15s",
                    "scrapeTimeout": "10s",
                }
            )
        pool = self._one(form, "scrapePool")
        if pool:
            active = [t for t in active if t["scrapePool"] == pool]
        active.sort(key=lambda t: (t["scrapePool"], t["scrapeUrl"]))
        data: dict[str, Any] = {"activeTargets": active, "droppedTargets": [], "droppedTargetCounts": {}}
        if state == "dropped":
            data["activeTargets"] = []
        elif state == "active":
            data["droppedTargets"] = []
        return success(data)

    def targets_metadata(self, req: Request) -> Response:
        form = self._form(req)
        metric = self._one(form, "metric")
        match = self._one(form, "match_target")
        ms: list[Matcher] = []
        if match:
            sets = self._match_sets({"match[]": [match]}, required=True)
            ms = sets[0] if sets else []
        with self.twin.lock:
            meta = self.source().metadata()
        out = []
        for lb, _ in self._up_targets():
            if ms and not all(m.matches(lb) for m in ms):
                continue
            for name, m in sorted(meta.items()):
                if metric is None or name == metric:
                    out.append({"target": lb, "metric": name, "type": m.type, "help": m.help, "unit": m.unit})
        lim = self._one(form, "limit")
        if lim and lim.lstrip("-").isdigit() and int(lim) > 0:
            out = out[: int(lim)]
        return success(out)

    def buildinfo(self, req: Request) -> Response:
        return success(dict(BUILD_INFO))

    def status_config(self, req: Request) -> Response:
        from .status import config_yaml

        return success({"yaml": config_yaml(self)})

    def status_flags(self, req: Request) -> Response:
        from .status import flags

        return success(flags(self))

    def status_runtimeinfo(self, req: Request) -> Response:
        from .status import runtimeinfo

        return success(runtimeinfo(self))

    def status_tsdb(self, req: Request) -> Response:
        from .status import tsdb

        return success(tsdb(self, req))

    def format_query(self, req: Request) -> Response:
        from .status import format_query

        return success(format_query(self, req))

    def query_exemplars(self, req: Request) -> Response:
        from .status import query_exemplars

        return success(query_exemplars(self, req))

    def federate(self, req: Request) -> Response:
        from .status import federate

        return federate(self, req)


def _limit(data: list[Any], form: dict[str, list[str]]) -> list[Any]:
    lim = form.get("limit")
    if lim and lim[0]:
        try:
            n = int(lim[0])
        except ValueError:
            raise ApiError(
                "bad_data", 'invalid parameter "limit": cannot parse "' + lim[0] + '" to a valid limit'
            ) from None
        if n > 0:
            return data[:n]
    return data


def _decode_u(name: str) -> str:
    """Prometheus' ``U__`` label-name escaping (``U__a_2e_b`` → ``a.b``)."""
    body = name[3:]
    return re.sub(r"_([0-9a-fA-F]+)_", lambda m: chr(int(m.group(1), 16)), body).replace("__", "_")


def make_prometheus_handler(twin: Any) -> Handler:
    """The handler the twin serves at its Prometheus URL (also its Alertmanager URL)."""
    return PrometheusApi(twin)
