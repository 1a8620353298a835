"""Record what an episode's agent would observe, in ITBench-Lite's layout (``layout.py``).

Everything is read over the episode's public endpoints with the harness's credential, at the moment
the agent's turn would start (after the faults and the alert wait), so the same recorder serves a
twin and a live cluster:

- every Kubernetes object of every listable resource (discovery, preferred versions), Events apart;
- ``/api/v1/alerts`` and ``/api/v1/rules``;
- every metric's raw samples over the window (``name[<window>s]``: a range selector returns the
  samples as stored, not evaluated at steps);
- every log line over the window (``query_range`` in pages, forward);
- Jaeger's traces per service over the window (each trace once) and its dependency links.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from ..harness.firing import match_expected
from ..k8s.client import KubeApi
from ..scenario.spec import Scenario
from .layout import (
    ALERTS_DIR,
    APP_FILE,
    EVENT_COLUMNS,
    EVENTS_FILE,
    GROUND_TRUTH_FILE,
    LOG_COLUMNS,
    LOGS_FILE,
    META_FILE,
    METRIC_COLUMNS,
    METRICS_DIR,
    OBJECT_COLUMNS,
    OBJECTS_FILE,
    RULES_FILE,
    SPAN_KINDS,
    TRACE_COLUMNS,
    TRACES_FILE,
    SnapshotMeta,
    alerts_file_name,
    dumps,
    fmt_float,
    iso_ms,
    iso_ns,
    metric_file,
    write_tsv,
)

DEFAULT_WINDOW_S = 1800.0
TRACES_PER_QUERY = 1000
"""Jaeger search limit per service (all traces, then error traces): the union is kept."""
LOG_PAGE = 5000
"""Loki's default ``max_entries_limit_per_query``."""
MAX_LOG_LINES = 500_000
LOG_LABELS = ("namespace", "k8s_namespace_name", "service_name", "job", "container")
"""Labels tried first for a selector of every log stream."""
DEPENDENCY_LOOKBACK_MS = 3600 * 1000
SKIPPED_RESOURCES = {("events.k8s.io/v1", "Event")}
"""The same Events again, in their newer API: written once, from the core API."""

Progress = Callable[[str], None]


class Recorder:
    """Reads one cluster's observable state at ``now`` over its endpoints."""

    def __init__(
        self,
        api: KubeApi,
        prometheus_url: str,
        loki_url: str | None,
        jaeger_url: str | None,
        now: float,
        window_s: float = DEFAULT_WINDOW_S,
        timeout_s: float = 60.0,
        secret_namespaces: list[str] | None = None,
    ) -> None:
        """``secret_namespaces``: where Secrets are recorded — the agent's namespaces, the only ones
        whose Secrets it can read (a live cluster's others, kube-system's tokens and keys, stay out of
        the folder); None: everywhere."""
        self.secret_namespaces = secret_namespaces
        self.api = api
        self.prometheus = prometheus_url.rstrip("/")
        self.loki = loki_url.rstrip("/") if loki_url else None
        self.jaeger = jaeger_url.rstrip("/") if jaeger_url else None
        self.now = now
        self.window_s = window_s
        self.timeout_s = timeout_s
        self.http = requests.Session()
        self.truncated: list[str] = []
        """What hit a limit and was cut short (said in ``snapshot.json``)."""

    def _get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        resp = self.http.get(url, params=params, timeout=self.timeout_s)
        if resp.status_code != 200:
            raise RuntimeError(f"GET {url.split('?')[0]}: HTTP {resp.status_code}: {resp.text[:300]}")
        return resp.json()

    # ------------------------------------------------------------------ Kubernetes
    def objects(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(objects, events): every listable resource's objects, Events apart."""
        objs: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        for info in self.api.api_resources(("list",)):
            if (info.api_version, info.kind) in SKIPPED_RESOURCES:
                continue
            if (info.api_version, info.kind) == ("v1", "Secret") and self.secret_namespaces is not None:
                items = [o for ns in self.secret_namespaces for o in self.api.list("v1", "Secret", ns)]
            else:
                items = self.api.list(info.api_version, info.kind)
            (events if (info.api_version, info.kind) == ("v1", "Event") else objs).extend(items)
        return objs, events

    # ------------------------------------------------------------------ Prometheus
    def alerts(self) -> dict[str, Any]:
        body: dict[str, Any] = self._get(self.prometheus + "/api/v1/alerts")
        return body

    def rule_groups(self) -> list[dict[str, Any]]:
        body = self._get(self.prometheus + "/api/v1/rules")
        return list((body.get("data") or {}).get("groups") or [])

    def series(self) -> list[tuple[dict[str, str], list[list[Any]]]]:
        """Every series with samples in the window: (labels with ``__name__``, [[t, "v"], ...])."""
        names = self._get(
            self.prometheus + "/api/v1/label/__name__/values",
            {"start": self.now - self.window_s, "end": self.now},
        ).get("data", [])
        out: list[tuple[dict[str, str], list[list[Any]]]] = []
        for name in sorted(names):
            body = self._get(
                self.prometheus + "/api/v1/query",
                {"query": f'{{__name__="{name}"}}[{int(self.window_s)}s]', "time": self.now},
            )
            for r in (body.get("data") or {}).get("result") or []:
                out.append((dict(r.get("metric") or {}), list(r.get("values") or [])))
        return out

    # ------------------------------------------------------------------ Loki
    def log_lines(self) -> list[tuple[dict[str, str], int, str]]:
        """(stream labels, ns, line) of every line in the window, oldest first."""
        if self.loki is None:
            return []
        start = int((self.now - self.window_s) * 1e9)
        end = int(self.now * 1e9) + 1
        selector = self._log_selector(start, end)
        if selector is None:
            return []
        seen: set[tuple[str, int, str]] = set()
        out: list[tuple[dict[str, str], int, str]] = []
        while len(out) < MAX_LOG_LINES:
            body = self._get(
                self.loki + "/loki/api/v1/query_range",
                {
                    "query": selector,
                    "start": start,
                    "end": end,
                    "limit": LOG_PAGE,
                    "direction": "forward",
                },
            )
            page: list[tuple[dict[str, str], int, str]] = []
            for stream in (body.get("data") or {}).get("result") or []:
                labels = dict(stream.get("stream") or {})
                for ts, line in stream.get("values") or []:
                    page.append((labels, int(ts), str(line)))
            fresh = 0
            for labels, ts, line in sorted(page, key=lambda e: e[1]):
                key = (dumps(labels), ts, line)
                if key not in seen:
                    seen.add(key)
                    out.append((labels, ts, line))
                    fresh += 1
            if len(page) < LOG_PAGE or fresh == 0:
                break
            start = max(ts for _, ts, _ in page)  # inclusive: lines at this instant not yet seen follow
        if len(out) >= MAX_LOG_LINES:
            self.truncated.append(f"logs: the first {MAX_LOG_LINES} lines of the window")
            del out[MAX_LOG_LINES:]
        return out

    def _log_selector(self, start: int, end: int) -> str | None:
        """A selector every stream of the window matches: LogQL needs one non-empty matcher, on a
        label the streams carry (``namespace`` here and in Promtail's setups, ``k8s_namespace_name``
        where OpenTelemetry ships the logs, ...); None when Loki knows no label at all."""
        assert self.loki is not None
        labels = self._get(self.loki + "/loki/api/v1/labels", {"start": start, "end": end}).get("data") or []
        for name in (*LOG_LABELS, *sorted(labels)):
            if name in labels:
                return f'{{{name}=~".+"}}'
        return None

    # ------------------------------------------------------------------ Jaeger
    def traces(self) -> list[dict[str, Any]]:
        """Jaeger's trace JSON of every trace its search finds per service in the window."""
        if self.jaeger is None:
            return []
        services = self._get(self.jaeger + "/api/services").get("data") or []
        found: dict[str, dict[str, Any]] = {}
        start_us, end_us = int((self.now - self.window_s) * 1e6), int(self.now * 1e6)
        for svc in sorted(services):
            for tags in (None, '{"error":"true"}'):
                params: dict[str, Any] = {
                    "service": svc,
                    "start": start_us,
                    "end": end_us,
                    "limit": TRACES_PER_QUERY,
                }
                if tags:
                    params["tags"] = tags
                got = self._get(self.jaeger + "/api/traces", params).get("data") or []
                if len(got) >= TRACES_PER_QUERY:
                    what = "error traces" if tags else "traces"
                    self.truncated.append(f"traces: {svc}'s {TRACES_PER_QUERY} newest {what} of the window")
                for t in got:
                    found.setdefault(str(t.get("traceID")), t)
        return [found[k] for k in sorted(found)]

    def dependencies(self) -> list[dict[str, Any]]:
        if self.jaeger is None:
            return []
        body = self._get(
            self.jaeger + "/api/dependencies",
            {"endTs": int(self.now * 1000), "lookback": DEPENDENCY_LOOKBACK_MS},
        )
        return list(body.get("data") or [])


# ----------------------------------------------------------------------------- rows
def object_rows(objs: list[dict[str, Any]], now: float) -> list[list[str]]:
    ts = iso_ms(int(now * 1000))
    rows = []
    for o in objs:
        meta = o.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        rows.append([ts, str(o.get("kind", "")), ns, ns, str(meta.get("name", "")), dumps(o)])
    return rows


def event_rows(events: list[dict[str, Any]], now: float) -> list[list[str]]:
    rows = []
    for ev in events:
        when = (
            ev.get("lastTimestamp")
            or ev.get("eventTime")
            or (ev.get("metadata") or {}).get("creationTimestamp")
        )
        rows.append([str(when or iso_ms(int(now * 1000))), dumps({"type": "ADDED", "object": ev})])
    return rows


def span_rows(traces: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for t in traces:
        procs = t.get("processes") or {}
        for s in t.get("spans") or []:
            proc = procs.get(s.get("processID")) or {}
            service = str(proc.get("serviceName", ""))
            tags = {str(kv["key"]): kv.get("value") for kv in s.get("tags") or []}
            kind = str(tags.pop("span.kind", "internal") or "internal")
            error = tags.pop("error", False) is True
            parent = next(
                (r.get("spanID") for r in s.get("references") or [] if r.get("refType") == "CHILD_OF"), ""
            )
            resource = {
                "service.name": service,
                **{str(kv["key"]): kv.get("value") for kv in proc.get("tags") or []},
            }
            logs = s.get("logs") or []
            rows.append(
                [
                    iso_ns(int(s.get("startTime", 0)) * 1000),
                    str(s.get("traceID") or t.get("traceID")),
                    str(s.get("spanID")),
                    str(parent or ""),
                    str(s.get("operationName", "")),
                    SPAN_KINDS.get(kind, kind),
                    service,
                    dumps(resource),
                    dumps(tags),
                    str(int(s.get("duration", 0)) * 1000),
                    "Error" if error else "Unset",
                    "",
                    dumps([iso_ns(int(lg.get("timestamp", 0)) * 1000) for lg in logs]),
                    dumps(
                        [{str(kv["key"]): kv.get("value") for kv in lg.get("fields") or []} for lg in logs]
                    ),
                    fmt_float(int(s.get("duration", 0)) / 1000),
                ]
            )
    return rows


def log_rows(lines: list[tuple[dict[str, str], int, str]]) -> list[list[str]]:
    return [
        [
            iso_ns(ts),
            "",
            "",
            str(labels.get("level", "")),
            str(labels.get("service_name") or labels.get("app") or labels.get("container", "")),
            line,
            dumps(labels),
            "{}",
        ]
        for labels, ts, line in lines
    ]


def metric_files(series: list[tuple[dict[str, str], list[list[Any]]]]) -> dict[str, list[list[str]]]:
    files: dict[str, list[list[str]]] = defaultdict(list)
    for labels, values in series:
        name = labels.get("__name__", "")
        tags = {k: v for k, v in labels.items() if k != "__name__"}
        rows = files[metric_file(labels)]
        cell = repr(dict(sorted(tags.items())))  # a dict literal, as ITBench-Lite's metric files have
        for t, v in values:
            rows.append([iso_ms(int(round(float(t) * 1000))), name, fmt_float(float(v)), cell])
    return files


def app_json(services: list[str], links: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "components": {"services": [{"name": s} for s in services], "infrastructure": []},
        "dependencies": [
            {
                "source": str(d.get("parent")),
                "target": str(d.get("child")),
                "calls": int(d.get("callCount", 0)),
            }
            for d in links
        ],
    }


# ----------------------------------------------------------------------------- the folder
@dataclass
class Observed:
    """What a recorder read, in the endpoints' own shapes."""

    now: float
    window_s: float
    objects: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    alerts: dict[str, Any] = field(default_factory=dict)
    """``/api/v1/alerts``' whole answer."""
    rule_groups: list[dict[str, Any]] = field(default_factory=list)
    series: list[tuple[dict[str, str], list[list[Any]]]] = field(default_factory=list)
    log_lines: list[tuple[dict[str, str], int, str]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)
    """Jaeger's trace JSON."""
    links: list[dict[str, Any]] = field(default_factory=list)
    """Jaeger's ``/api/dependencies`` data."""

    @property
    def shown_alerts(self) -> list[dict[str, Any]]:
        return list((self.alerts.get("data") or {}).get("alerts") or [])


def observe(rec: Recorder, progress: Progress | None = None) -> Observed:
    say = progress or (lambda _msg: None)
    out = Observed(now=rec.now, window_s=rec.window_s)
    say("kubernetes objects")
    out.objects, out.events = rec.objects()
    say("alerts and rules")
    out.alerts = rec.alerts()
    out.rule_groups = rec.rule_groups()
    say("metrics")
    out.series = rec.series()
    say("logs")
    out.log_lines = rec.log_lines()
    say("traces")
    out.traces = rec.traces()
    out.links = rec.dependencies()
    return out


def write_observed(folder: Path, seen: Observed) -> dict[str, int]:
    """ITBench-Lite's files for ``seen`` in ``folder``; returns the rows written per kind of data."""
    counts: dict[str, int] = {}
    counts["objects"] = write_tsv(folder / OBJECTS_FILE, OBJECT_COLUMNS, object_rows(seen.objects, seen.now))
    counts["events"] = write_tsv(folder / EVENTS_FILE, EVENT_COLUMNS, event_rows(seen.events, seen.now))
    (folder / ALERTS_DIR).mkdir(parents=True, exist_ok=True)
    (folder / ALERTS_DIR / alerts_file_name(seen.now)).write_text(dumps(seen.alerts) + "\n")
    (folder / RULES_FILE).write_text(dumps(seen.rule_groups) + "\n")
    counts["alerts"] = len(seen.shown_alerts)
    counts["series"] = len(seen.series)
    counts["samples"] = 0
    for name, rows in sorted(metric_files(seen.series).items()):
        counts["samples"] += write_tsv(folder / METRICS_DIR / f"{name}.tsv", METRIC_COLUMNS, rows)
    counts["log_lines"] = write_tsv(folder / LOGS_FILE, LOG_COLUMNS, log_rows(seen.log_lines))
    counts["traces"] = len(seen.traces)
    counts["spans"] = write_tsv(folder / TRACES_FILE, TRACE_COLUMNS, span_rows(seen.traces))
    services = sorted({str(d.get(k)) for d in seen.links for k in ("parent", "child")})
    (folder / APP_FILE).write_text(dumps(app_json(services, seen.links)) + "\n")
    return counts


def write_snapshot(
    rec: Recorder,
    out: Path,
    scenario: Scenario,
    *,
    seed: int,
    injected_at: float | None,
    fault_objects: set[str],
    replicasets_before: set[str],
    call_edges: list[tuple[str, str, str]],
    progress: Progress | None = None,
) -> SnapshotMeta:
    """Record ``rec``'s cluster into ``out`` (replaced if there), with ``scenario``'s ground truth."""
    seen = observe(rec, progress)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    counts = write_observed(tmp, seen)
    (tmp / GROUND_TRUTH_FILE).write_text(
        yaml.safe_dump(scenario.ground_truth.model_dump(mode="json", exclude_defaults=True), sort_keys=False)
    )
    hit, miss = match_expected(scenario.alerts, [a for a in seen.shown_alerts if a.get("state") == "firing"])
    meta = SnapshotMeta(
        scenario_id=scenario.id,
        app=scenario.app,
        namespace=scenario.namespace,
        namespaces=list(scenario.namespaces),
        seed=seed,
        recorded_at=seen.now,
        injected_at=injected_at,
        window_s=seen.window_s,
        alerts_expected=hit,
        alerts_missing=miss,
        fault_objects=sorted(fault_objects),
        replicasets_before=sorted(replicasets_before),
        call_edges=sorted(call_edges),
        counts=counts,
        truncated=list(rec.truncated),
    )
    (tmp / META_FILE).write_text(meta.model_dump_json(indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return meta


RECORD_HOOK = "itbench_agents.snapshots.record:record_episode"
"""``RunConfig.before_agent`` of ``itbench run --record-snapshots``."""
EPISODE_SNAPSHOT = "snapshot"


def record_episode(env: Any, episode_folder: Path) -> dict[str, Any]:
    """The harness's hook before the agent's turn: the episode's observable state, exactly as the
    agent is about to find it, into ``<episode folder>/snapshot`` (a twin scenario file's episode
    on any backend; other personas' episodes are left alone)."""
    scenario = getattr(env, "scenario", None)
    api = getattr(env, "api", None)
    if not isinstance(scenario, Scenario) or not isinstance(api, KubeApi):
        return {"snapshot": None, "why": "only the twin's SRE scenario files are recorded"}
    ep = env.endpoints
    rec = Recorder(
        api,
        ep.prometheus_url,
        ep.loki_url,
        ep.jaeger_url,
        env.now(),
        secret_namespaces=scenario.task_namespaces,
    )
    meta = write_snapshot(
        rec,
        Path(episode_folder) / EPISODE_SNAPSHOT,
        scenario,
        seed=int(env.seed),
        injected_at=env.injected_at,
        fault_objects=set(env.fault_objects),
        replicasets_before=set(env.replicasets_before),
        call_edges=env.call_edges(),
    )
    return {"snapshot": EPISODE_SNAPSHOT, "counts": meta.counts}
