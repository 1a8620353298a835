"""App-level gauges: the behaviour model's extra gauges, datastore exporters and ``up``.

- ``ServiceHealth.extra_gauges`` (Kafka consumer lag, valkey memory...) become gauges carrying the
  given labels plus ``namespace`` and ``job``; absent while a snapshot does not report them. Kafka
  consumer-group gauges are also published under kafka-exporter's names
  (``kafka_consumergroup_lag{consumergroup, topic, partition}``, ``kafka_consumergroup_members``).
- valkey/redis and PostgreSQL services get their exporters' basics (``redis_up``,
  ``redis_memory_used_bytes``, ``redis_connected_clients``, ``redis_commands_processed_total``,
  ``pg_up``, ``pg_stat_database_numbackends``, ``pg_stat_database_xact_commit``) from health.
- ``up{job, instance}`` for the scrape targets that exist: kube-state-metrics, and kubelet /
  node-exporter per node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...k8s.kinds import GroupResource
from .context import TelemetryContext
from .noise import key64, ms_since, uniform
from .profile import Profile
from .seriesdb import SeriesDef, add_series
from .sources import MetricMetadata

NODES = GroupResource("", "nodes")
GAUGE_HELP = "Gauge reported by the application model."

DATASTORE_META = {
    "redis_up": MetricMetadata("gauge", "Information about the Redis instance"),
    "redis_memory_used_bytes": MetricMetadata("gauge", "memory_used_bytes metric"),
    "redis_connected_clients": MetricMetadata("gauge", "connected_clients metric"),
    "redis_commands_processed_total": MetricMetadata("counter", "commands_processed_total metric"),
    "pg_up": MetricMetadata(
        "gauge",
        "Whether the last scrape of metrics from PostgreSQL was able to connect to the server (1 for yes, 0 for no).",
    ),
    "pg_stat_database_numbackends": MetricMetadata(
        "gauge", "Number of backends currently connected to this database."
    ),
    "pg_stat_database_xact_commit": MetricMetadata(
        "counter", "Number of transactions in this database that have been committed"
    ),
    "up": MetricMetadata("gauge", "1 if the instance is healthy, i.e. reachable, or 0 if the scrape failed."),
}


def datastore_kind(service: str) -> str | None:
    s = service.lower()
    if "valkey" in s or "redis" in s:
        return "redis"
    if "postgres" in s:
        return "postgres"
    return None


class AppGaugeFamily:
    def __init__(self, ctx: TelemetryContext) -> None:
        self.ctx = ctx
        self._token: object = None
        self._series: dict[str, list[SeriesDef]] = {}
        self._extra_names: set[str] = set()
        self._names_token: object = None
        self._names_cache: set[str] = set()

    def metadata(self) -> dict[str, MetricMetadata]:
        meta = dict(DATASTORE_META)
        for n in self._scan_extra_names():
            meta[n] = MetricMetadata("gauge", GAUGE_HELP)
        return meta

    def _scan_extra_names(self) -> set[str]:
        tok = self.ctx.health_token()
        if self._names_token != tok:
            self._names_cache = {
                g[0]
                for s in self.ctx.snapshots()
                for sh in s.services.values()
                for g in _with_aliases(sh.extra_gauges)
            }
            self._names_token = tok
        return self._names_cache

    def series(self, name: str) -> list[SeriesDef]:
        tok = (self.ctx.history.token, self.ctx.health_token())
        if tok != self._token:
            self._build()
            self._token = tok
        return self._series.get(name, [])

    def _build(self) -> None:
        snaps = self.ctx.snapshots()
        ns = self.ctx.namespace()
        out: dict[str, list[SeriesDef]] = {}
        times = np.asarray([s.since for s in snaps], dtype=np.float64)

        # extra gauges
        table: dict[tuple[str, tuple[tuple[str, str], ...], str], np.ndarray] = {}
        for i, s in enumerate(snaps):
            for svc, sh in s.services.items():
                for metric, lbls, value in _with_aliases(sh.extra_gauges):
                    k = (metric, tuple(sorted(lbls)), svc)
                    arr = table.get(k)
                    if arr is None:
                        arr = table[k] = np.full(len(snaps), np.nan)
                    arr[i] = value
        self._extra_names = {k[0] for k in table}
        for (metric, lbls, svc), arr in table.items():
            labels = {"namespace": ns, "job": f"{ns}/{svc}", **dict(lbls)}
            first = float(times[np.nonzero(~np.isnan(arr))[0][0]])
            add_series(out, metric, labels, _profile_render(Profile(times, arr)), first)

        # datastores
        for svc in sorted(self.ctx.services()):
            kind = datastore_kind(svc)
            if kind is None or not len(times):
                continue
            ready = np.asarray(
                [float(s.services[svc].ready_pods > 0) if svc in s.services else 0.0 for s in snaps]
            )
            mem = np.asarray(
                [(s.services[svc].memory_bytes_per_pod if svc in s.services else 0.0) for s in snaps]
            )
            calls = np.asarray(
                [sum(e.rate * (1 - e.error_ratio) for e in s.edges if e.callee == svc) for s in snaps]
            )
            clients = np.asarray(
                [float(len({e.caller for e in s.edges if e.callee == svc and e.rate > 0})) for s in snaps]
            )
            labels = {
                "namespace": ns,
                "job": f"{ns}/{svc}",
                "instance": f"{svc}:{9121 if kind == 'redis' else 9187}",
            }
            dkey = key64(self.ctx.seed, "datastore", svc)
            up = _profile_render(Profile(times, ready))
            start = float(times[0])
            conn = Profile(times, np.where(ready > 0, clients * (4 if kind == "redis" else 5) + 1, 0.0))
            if kind == "redis":
                add_series(out, "redis_up", labels, up, start)
                add_series(
                    out,
                    "redis_memory_used_bytes",
                    labels,
                    _profile_render(Profile(times, np.where(mem > 0, mem, 2.5e6))),
                    start,
                )
                add_series(out, "redis_connected_clients", labels, _profile_render(conn), start)
                add_series(
                    out,
                    "redis_commands_processed_total",
                    labels,
                    _counter_render(Profile(times, calls * 2), dkey, self.ctx.epoch),
                    start,
                )
            else:
                add_series(out, "pg_up", labels, up, start)
                db = {**labels, "datname": "otel"}
                add_series(out, "pg_stat_database_numbackends", db, _profile_render(conn), start)
                add_series(
                    out,
                    "pg_stat_database_xact_commit",
                    db,
                    _counter_render(Profile(times, calls), dkey, self.ctx.epoch),
                    start,
                )

        # up
        first = (
            self.ctx.twin.store.log[0].time
            if self.ctx.twin.store.log
            else (float(times[0]) if len(times) else 0.0)
        )
        add_series(
            out,
            "up",
            {"job": "kube-state-metrics", "instance": "kube-state-metrics:8080"},
            lambda t: np.ones(len(t)),
            first,
        )
        for rec in self.ctx.history.of(NODES):
            for job, port in (("kubelet", 10250), ("node-exporter", 9100)):
                add_series(
                    out,
                    "up",
                    {"job": job, "instance": f"{rec.name}:{port}", "node": rec.name},
                    lambda t: np.ones(len(t)),
                    rec.first,
                    rec.last,
                )
        self._series = out


Gauge = tuple[str, tuple[tuple[str, str], ...], float]
# The behaviour model reports Kafka consumer groups as the collector's kafkametrics receiver names
# them; dashboards and alert rules (ours included) mostly use kafka-exporter's names: publish both.
KAFKA_EXPORTER_ALIASES = {
    "kafka_consumer_group_lag": "kafka_consumergroup_lag",
    "kafka_consumer_group_members": "kafka_consumergroup_members",
}


def _with_aliases(gauges: tuple[Gauge, ...]) -> list[Gauge]:
    out = list(gauges)
    for metric, lbls, value in gauges:
        alias = KAFKA_EXPORTER_ALIASES.get(metric)
        if alias is None:
            continue
        labels = {("consumergroup" if k == "group" else k): v for k, v in lbls}
        if alias == "kafka_consumergroup_lag":
            labels.setdefault("partition", "0")
        else:
            labels.pop("topic", None)
        out.append((alias, tuple(sorted(labels.items())), value))
    return out


def _profile_render(prof: Profile) -> Any:
    return lambda t: prof.at(t)


def _counter_render(prof: Profile, key: int, epoch: float) -> Any:
    def render(t: np.ndarray) -> np.ndarray:
        jit = (2 * uniform(key, ms_since(t, epoch)) - 1) * 5.0
        return np.floor(prof.integral(np.maximum(t + jit, prof.start)))  # type: ignore[no-any-return]

    return render
