"""Wiring: ``install_telemetry(twin)`` sets ``twin.metrics``, ``twin.logs`` and ``twin.traces``.

All three are pure functions of (``twin.health`` timeline, ``twin.store.log``, time, ``twin.seed``),
computed lazily at query time; nothing is stored per sample.
"""

from __future__ import annotations

from typing import Any

from .appgauges import AppGaugeFamily
from .cadvisor import CadvisorFamily
from .context import TelemetryContext
from .kube_state import kube_state_families
from .logs import PodLogSource
from .seriesdb import Family, MetricsSource
from .spanmetrics import SpanMetricsFamily
from .traces import SampledTraceSource


def make_metrics(ctx: TelemetryContext) -> MetricsSource:
    families: list[Family] = [
        SpanMetricsFamily(ctx),
        *kube_state_families(ctx),
        CadvisorFamily(ctx),
        AppGaugeFamily(ctx),
    ]
    # addons that export metrics of their own (OpenCost's cost metrics) add a family
    for addon in (getattr(ctx.twin, "addons", None) or {}).values():
        make_family = getattr(addon, "metric_family", None)
        if callable(make_family):
            families.append(make_family())
    return MetricsSource(families, ctx.now)


def install_telemetry(twin: Any) -> TelemetryContext:
    """Attach the twin's metric, log and trace sources; returns their shared context."""
    ctx = TelemetryContext(twin)
    twin.metrics = make_metrics(ctx)
    twin.logs = PodLogSource(ctx)
    twin.traces = SampledTraceSource(ctx)
    return ctx
