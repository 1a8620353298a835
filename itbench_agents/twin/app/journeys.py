"""User journeys: the functional probe of every thing a user does with the app.

An app folder may hold ``journeys.yaml``::

    journeys:
      checkout:
        steps: [[frontend-proxy, "POST /api/checkout"]]      # requests through the front door
        consumers: [[accounting, orders receive]]            # asynchronous work the journey starts
    telemetry:
      pipeline: [otel-collector]                            # services telemetry flows through

Each step is one request from outside the cluster to an entry service (the address the load
generator uses), evaluated on the current cluster state with the behaviour model's call graph
(``propagation.py``), exactly as :meth:`BehaviourModel.probe` does for its operations. A consumer
step passes when the consumer and its broker serve, its consume operation does not fail and its
lag does not grow. Apps without the file get one journey per ``probe`` operation.

Nothing here reads a scenario: only the app model and the objects in the store.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field

from .network import connect
from .propagation import LagState, Leak, Propagation

if TYPE_CHECKING:
    from ..core import TwinCore
    from ..faults.effects import Effects
    from .cluster import ClusterView
    from .model import AppModel


class BehaviourModel(Protocol):
    """What probing the journeys (here and ``front_door.py``) reads of the app's behaviour model
    (``behaviour.BehaviourModel``, which calls them)."""

    twin: TwinCore
    app: AppModel
    lags: dict[str, LagState]
    leaks: dict[tuple[str, str], Leak]

    def _view_and_effects(self, now: float) -> tuple[ClusterView, Effects]: ...


JOURNEYS_FILE = "journeys.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Journey(_Strict):
    steps: list[tuple[str, str]] = Field(min_length=1, description="(entry service, operation) requests")
    consumers: list[tuple[str, str]] = Field(
        default_factory=list, description="(consumer service, consume operation) the journey triggers"
    )


class TelemetrySpec(_Strict):
    pipeline: list[str] = Field(
        default_factory=list,
        description="services telemetry (spans, span metrics, logs) flows through, e.g. the OTel collector",
    )


class JourneysSpec(_Strict):
    journeys: dict[str, Journey] = Field(default_factory=dict)
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec)
    examples: dict[str, str] = Field(
        default_factory=dict,
        description="a value for each path parameter of the steps ({productId}) in a real request",
    )


class JourneyResult(BaseModel):
    name: str
    ok: bool
    error_ratio: float = 0.0
    p95_ms: float = 0.0
    detail: str = ""


@lru_cache(maxsize=16)
def _load(folder: str, mtime: float) -> JourneysSpec:
    path = Path(folder) / JOURNEYS_FILE
    return JourneysSpec.model_validate(yaml.safe_load(path.read_text()) or {})


def journeys_spec(app: AppModel) -> JourneysSpec:
    """The app's journeys (``journeys.yaml``), or one journey per probe operation."""
    path = Path(app.folder) / JOURNEYS_FILE if app.folder else None
    if path is not None and path.is_file():
        spec = _load(str(path.parent), path.stat().st_mtime)
        if spec.journeys:
            return spec
        fallback = spec.telemetry
    else:
        fallback = TelemetrySpec()
    ops = app.behaviour.probe.operations
    return JourneysSpec(
        journeys={f"{s} {o}": Journey(steps=[(s, o)]) for s, o in ops},
        telemetry=fallback,
    )


def pipeline_services(app: AppModel | None) -> list[str]:
    """Services the app's telemetry flows through (empty: telemetry does not depend on one)."""
    if app is None:
        return []
    try:
        return list(journeys_spec(app).telemetry.pipeline)
    except Exception:  # a broken file must not break telemetry; validation reports it
        return []


def first_symptom(outcome: Any) -> str:
    """The message of an operation outcome's first symptom that affects requests ("" when none)."""
    return next((m for _, m, r, _ in outcome.symptoms if r > 0), "")


def front_door_error(view: Any, load_deps: dict[str, Any], service: str, own_err: float) -> tuple[float, str]:
    """Error ratio of a request to ``service`` as the load generator sees it — the share that
    cannot reach it (or none reach: no ready pods) plus its own errors — and the first reason."""
    reach, reason = 1.0, ""
    if service in load_deps:
        conn = connect(view, None, service, load_deps[service], {})
        reach = conn.reach
        reason = conn.symptoms[0][1] if conn.symptoms else ""
    elif not view.serving(service):
        reach, reason = 0.0, f"{service} has no ready pods"
    return 1 - reach * (1 - own_err), reason


def probe_journeys(model: BehaviourModel, now: float | None = None) -> list[JourneyResult]:
    """Probe every journey of the app on the cluster state at ``now`` (default: the twin's now)."""
    b = model.app.behaviour
    spec = journeys_spec(model.app)
    with model.twin.lock:
        t = model.twin.scheduler.now() if now is None else now
        view, fx = model._view_and_effects(t)
        prop = Propagation(view, fx, model.lags, model.leaks)
        result = prop.run(t)
        load_deps = b.services[b.load.service].dependencies
        out: list[JourneyResult] = []
        for name, j in spec.journeys.items():
            worst_err, worst_p95, why = 0.0, 0.0, ""
            failed = ""
            for s, o in j.steps:
                outcome = result.outcomes.get((s, o))
                if outcome is None:
                    failed = f"{s} {o}: no such operation"
                    break
                err, reason = front_door_error(view, load_deps, s, outcome.err)
                worst_err = max(worst_err, err)
                worst_p95 = max(worst_p95, outcome.p95)
                if err > b.probe.max_error_ratio:
                    first = reason or first_symptom(outcome)
                    failed = f"{s} {o}: {err:.0%} of requests fail: {first}".rstrip(": ")
                    break
                if outcome.p95 > b.probe.timeout_ms:
                    failed = f"{s} {o}: p95 latency {outcome.p95:.0f} ms > {b.probe.timeout_ms:.0f} ms"
                    break
            if not failed:
                failed = _consumers_failure(model, view, prop, result, j)
            if not failed:
                why = f"{len(j.steps)} request(s)" + (
                    f" and {len(j.consumers)} consumer(s)" if j.consumers else ""
                )
            out.append(
                JourneyResult(
                    name=name,
                    ok=not failed,
                    error_ratio=round(worst_err, 4),
                    p95_ms=round(worst_p95, 1),
                    detail=failed or why + " succeeded",
                )
            )
        return out


def _consumers_failure(model: BehaviourModel, view, prop, result, j: Journey) -> str:  # noqa: ANN001
    b = model.app.behaviour
    for cs, co in j.consumers:
        topic = next(
            (
                (tname, t, c)
                for tname, t in b.topics.items()
                for c in t.consumers
                if c.service == cs and c.op == co
            ),
            None,
        )
        if topic is None:
            return f"{cs} {co}: not a consumer of any topic"
        tname, t, cons = topic
        if not view.serving(t.broker):
            return f"{cs} {co}: broker {t.broker} has no ready pods"
        if not view.serving(cs):
            return f"{cs} {co}: {cs} has no ready pods (messages on {tname} are not consumed)"
        if t.broker in b.services[cs].dependencies and prop.conn(cs, t.broker).reach < 0.5:
            conn = prop.conn(cs, t.broker)
            why = conn.symptoms[0][1] if conn.symptoms else "unreachable"
            return f"{cs} {co}: cannot reach broker {t.broker}: {why}"
        outcome = result.outcomes.get((cs, co))
        if outcome is not None and outcome.err > b.probe.max_error_ratio:
            first = first_symptom(outcome)
            return f"{cs} {co}: {outcome.err:.0%} of messages fail: {first}".rstrip(": ")
        lag = result.lags.get(cons.group)
        if lag is not None and lag.growth > 0:
            return f"{cs} {co}: consumer group {cons.group} lag grows ({lag.lag:.0f} messages on {tname})"
    return ""
