"""A recorded cluster served as it was: the twin's API servers over fixed data, nothing acting.

A snapshot (ITBench-Lite's layout; ``harness/snapshots/``) is the observable state of a cluster at
one moment: its Kubernetes objects, the alerts Prometheus showed, metric samples, log lines,
traces and the call graph Jaeger drew. :func:`replay_twin` loads such data into a :class:`Twin`
built without controllers, on a clock stopped at the recorded moment, so that the same wire
protocols (Kubernetes REST, Prometheus, Loki, Jaeger) answer from the recording:

- Kubernetes objects are put back as recorded (uid, creationTimestamp, status kept), CRDs first so
  that custom kinds (Chaos Mesh) are served; nothing reconciles them;
- ``/api/v1/alerts``, ``/api/v2/alerts`` and ``/api/v1/rules`` answer with the recorded alerts and
  rules (:class:`RecordedAlerts`); the ``ALERTS`` series are among the recorded samples;
- PromQL runs over the recorded samples (:class:`~.prometheus.memstore.MemorySeriesSource`), LogQL
  over the recorded streams, Jaeger's search over the recorded traces and its dependencies are the
  recorded links (:class:`RecordedTraces`).

The clock does not move (``POST /itbench/v1/advance`` moves it, and nothing happens): a snapshot
has no future.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..k8s.kinds import GroupResource
from ..k8s.times import parse_rfc3339
from .clock import ManualClock
from .instance import Twin
from .jaeger.memory import InMemoryTraceSource
from .loki.memory import InMemoryLogSource
from .prometheus.alerts import Alert
from .prometheus.memstore import MemorySeriesSource
from .telemetry.sources import LogStream, Trace

CRD_KIND = "CustomResourceDefinition"


@dataclass
class Recording:
    """What a snapshot holds, as the twin's parts take it."""

    now: float
    """The recorded moment (Unix seconds): the served clock's time."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    """Kubernetes objects as the API served them (``apiVersion``, ``kind``, ``metadata``, ...)."""
    alerts: list[dict[str, Any]] = field(default_factory=list)
    """``/api/v1/alerts``' ``data.alerts`` at the recorded moment."""
    rule_groups: list[dict[str, Any]] = field(default_factory=list)
    """``/api/v1/rules``' ``data.groups`` at the recorded moment (empty when not recorded)."""
    series: list[tuple[dict[str, str], list[int], list[float]]] = field(default_factory=list)
    """Metric samples: (labels with ``__name__``, timestamps in ms, values)."""
    streams: list[LogStream] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    dependencies: list[tuple[str, str, int]] | None = None
    """Jaeger's ``/api/dependencies`` links (parent, child, calls) at the recorded moment; None:
    computed from the recorded traces."""
    namespace: str = "default"
    """The app's namespace (kubeconfigs written for the served cluster default to it)."""


class RecordedAlerts:
    """The alert engine's read side over recorded alerts (what the Prometheus handler calls)."""

    def __init__(self, alerts: Sequence[dict[str, Any]], rule_groups: Sequence[dict[str, Any]] = ()) -> None:
        self._alerts = [_alert(a) for a in alerts]
        self._recorded = {id(parsed): dict(raw) for parsed, raw in zip(self._alerts, alerts, strict=True)}
        self._groups = [dict(g) for g in rule_groups]

    def alert_json(self, alert: Alert) -> dict[str, Any]:
        """An alert as ``/api/v1/alerts`` showed it when recorded (its value's text and all)."""
        return dict(self._recorded[id(alert)])

    def active(self, now: float) -> list[Alert]:
        return [a for a in self._alerts if a.state in ("pending", "firing")]

    def firing(self, now: float) -> list[Alert]:
        return [a for a in self._alerts if a.state == "firing"]

    def rules(self, now: float, names: Collection[str] | None = None) -> list[dict[str, Any]]:
        return [dict(g) for g in self._groups]  # the handler keeps the named rules


def _alert(a: dict[str, Any]) -> Alert:
    labels = {str(k): str(v) for k, v in (a.get("labels") or {}).items()}
    try:
        active_at = parse_rfc3339(str(a.get("activeAt") or ""))
    except ValueError:
        active_at = 0.0
    try:
        value = float(a.get("value", 0))
    except (TypeError, ValueError):
        value = 0.0
    state = str(a.get("state") or "firing")
    return Alert(
        name=labels.get("alertname", ""),
        labels=labels,
        annotations={str(k): str(v) for k, v in (a.get("annotations") or {}).items()},
        state=state,
        active_at=active_at,
        value=value,
        fired_at=active_at if state == "firing" else None,
    )


class RecordedTraces(InMemoryTraceSource):
    """Recorded traces, with Jaeger's dependency links as recorded where they were."""

    def __init__(self, traces: Sequence[Trace], links: list[tuple[str, str, int]] | None) -> None:
        super().__init__(traces)
        self._links = links

    def dependencies(self, end_ms: int, lookback_ms: int) -> list[tuple[str, str, int]]:
        if self._links is None:
            return super().dependencies(end_ms, lookback_ms)
        return list(self._links)


def replay_twin(recording: Recording, left_out: list[str] | None = None) -> Twin:
    """A twin serving ``recording`` (not yet serving: call ``serve(workdir)``). Raises the API
    server's error (``ApiError``, naming the object) for an object it would not have stored; with
    ``left_out``, objects of kinds it does not serve (an ITBench-Lite cluster's Istio or metrics
    APIs without their CRDs) are named there instead and not served."""
    from .kube.errors import ApiError
    from .kube.resources import registry_for

    twin = Twin(clock=ManualClock(recording.now), controllers=False)
    twin.app = _App(recording.namespace)
    registry = registry_for(twin)  # subscribed before the CRDs go in, so their kinds are served
    ordered = sorted(recording.objects, key=lambda o: o.get("kind") != CRD_KIND)
    with twin.lock:
        for obj in ordered:
            try:
                info = registry.for_object(obj)
            except ApiError:
                if left_out is None:
                    raise
                meta = obj.get("metadata") or {}
                left_out.append(
                    f"{obj.get('apiVersion')} {obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}"
                )
                continue
            gr = GroupResource(info.gr.group, info.gr.resource)
            try:
                twin.store.restore(gr, obj)
            except ApiError as e:
                meta = obj.get("metadata") or {}
                e.add_note(f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}")
                raise
        metrics = MemorySeriesSource()
        for labels, ts, vs in recording.series:
            metrics.add(labels, ts, vs)
        twin.metrics = metrics
        twin.logs = InMemoryLogSource(recording.streams)
        twin.traces = RecordedTraces(recording.traces, recording.dependencies)
        twin.alerts = RecordedAlerts(recording.alerts, recording.rule_groups)
    return twin


@dataclass
class _App:
    """What the serving code reads of an app: its namespace."""

    namespace: str
