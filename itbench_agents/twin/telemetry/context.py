"""What every telemetry producer reads: the twin's health timeline, object history, seed and now.

The twin is used duck-typed (``seed``, ``health``, ``store``, ``now()``, ``masked``, optional
``app`` and ``runtime``) so tests can drive telemetry with hand-built timelines and stores.
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any

import numpy as np

from ..health import AppHealth, HealthTimeline, ServiceHealth
from .history import History, ObjRecord, container_instances
from .profile import Profile

Obj = dict[str, Any]

SERVICE_LABELS = (
    "app.kubernetes.io/component",
    "opentelemetry.io/name",
    "app.kubernetes.io/name",
    "io.kompose.service",
    "app",
    "name",
)
_HASHED = re.compile(r"^(.*?)(-[0-9a-f]{6,10})?(-[bcdfghjklmnpqrstvwxz2456789]{5})$")


class TelemetryContext:
    def __init__(self, twin: Any) -> None:
        self.twin = twin
        self.seed = int(getattr(twin, "seed", 0))
        self.epoch = float(getattr(twin, "created_at", 0.0))
        """The twin's birth (``Twin.created_at``; 0 for a hand-built stand-in): every random-looking
        number is keyed on time since it (``noise.ms_since``), so the same seed gives the same data
        at the same moment of the twin's life whatever wall-clock minute it started at."""
        self.history = History(twin.store)
        self._health_key: tuple[int, int] | None = None
        self._snaps: list[AppHealth] = []
        self._times: list[float] = []
        self._svc_profiles: dict[str, tuple[Profile, Profile, Profile]] = {}
        self._inst_cache: dict[tuple[str, str], tuple[int, dict[str, list[Any]]]] = {}
        self._pipe_key: object = None
        self._pipe: Profile | None = None

    # ------------------------------------------------------------------ time
    def now(self) -> float:
        fn = getattr(self.twin, "now", None)
        if callable(fn):
            return float(fn())
        return float(self.twin.clock.now())

    def masked(self, what: str) -> bool:
        return what in (getattr(self.twin, "masked", None) or ())

    # ------------------------------------------------------------------ health
    @property
    def timeline(self) -> HealthTimeline:
        return self.twin.health  # type: ignore[no-any-return]

    def health_token(self) -> tuple[int, int]:
        tl = self.timeline
        last = tl.at(math.inf)
        return (len(tl), id(last))

    def snapshots(self) -> list[AppHealth]:
        key = self.health_token()
        if key != self._health_key:
            self._snaps = list(self.timeline.between(-math.inf, math.inf))
            self._health_key = key
            self._svc_profiles = {}
        return self._snaps

    def snapshot_times(self) -> list[float]:
        snaps = self.snapshots()
        if len(self._times) != len(snaps) or (snaps and self._times[-1] != snaps[-1].since):
            self._times = [s.since for s in snaps]
        return self._times

    def cuts_between(self, a: float, b: float) -> list[float]:
        """Snapshot times strictly inside (a, b)."""
        times = self.snapshot_times()
        return times[bisect.bisect_right(times, a) : bisect.bisect_left(times, b)]

    def health_at(self, t: float) -> AppHealth | None:
        return self.timeline.at(t)

    def service_at(self, service: str, t: float) -> ServiceHealth | None:
        snap = self.timeline.at(t)
        return snap.services.get(service) if snap else None

    def namespace(self) -> str:
        snaps = self.snapshots()
        for s in reversed(snaps):
            if s.namespace:
                return s.namespace
        ns = getattr(getattr(self.twin, "app", None), "namespace", None)
        return str(ns) if ns else "default"

    def services(self) -> set[str]:
        out: set[str] = set()
        for s in self.snapshots():
            out.update(s.services)
        return out

    def usage_profiles(self, service: str) -> tuple[Profile, Profile, Profile] | None:
        """(cpu cores per pod, memory bytes per pod, CPU-starved flag) over time for a service,
        from health; the flag is 1 while the service reports a ``high_cpu`` symptom (demand above
        its limit, so the kernel throttles it)."""
        snaps = self.snapshots()
        if service not in self._svc_profiles:
            times, cpu, mem, hot = [], [], [], []
            for s in snaps:
                sh = s.services.get(service)
                times.append(s.since)
                cpu.append(sh.cpu_cores_per_pod if sh else 0.0)
                mem.append(sh.memory_bytes_per_pod if sh else 0.0)
                hot.append(1.0 if sh and any(x.kind == "high_cpu" for x in sh.symptoms) else 0.0)
            if not any(cpu) and not any(mem):
                return None
            self._svc_profiles[service] = (
                Profile.build(times, cpu),
                Profile.build(times, mem),
                Profile.build(times, hot),
            )
        return self._svc_profiles.get(service)

    # ------------------------------------------------------------------ telemetry pipeline
    def pipeline_profile(self) -> Profile | None:
        """1 while every service of the app's telemetry pipeline (``journeys.yaml``
        ``telemetry.pipeline``: the OTel collector) has a ready pod, else 0; None when the app
        declares no pipeline (telemetry then never stops)."""
        from ..app.journeys import pipeline_services

        snaps = self.snapshots()
        key = (self._health_key, "pipeline")
        if self._pipe_key == key:
            return self._pipe
        services = pipeline_services(getattr(self.twin, "app", None))
        prof: Profile | None = None
        if services and snaps:
            vals = []
            for s in snaps:
                up = True
                for name in services:
                    sh = s.services.get(name)
                    if sh is not None and sh.ready_pods <= 0:
                        up = False
                vals.append(1.0 if up else 0.0)
            if not all(vals):
                prof = Profile.build([s.since for s in snaps], vals)
        self._pipe_key, self._pipe = key, prof
        return prof

    def pipeline_up(self, t: np.ndarray) -> np.ndarray:
        """Whether telemetry flowed (the pipeline ran) at each time ``t`` (vectorised)."""
        prof = self.pipeline_profile()
        if prof is None:
            return np.ones(len(t), dtype=bool)
        v = prof.at(np.asarray(t, dtype=np.float64))
        return np.isnan(v) | (v > 0.5)  # type: ignore[no-any-return]

    def pipeline_up_at(self, t: float) -> bool:
        return bool(self.pipeline_up(np.asarray([t]))[0])

    # ------------------------------------------------------------------ pods
    def service_of(self, pod: Obj) -> str:
        """The app service a pod belongs to (its telemetry ``service.name``)."""
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        known = self.services()
        app = getattr(self.twin, "app", None)
        if app is not None and hasattr(app, "service_of_workload"):
            m = _HASHED.match(str(meta.get("name", "")))
            workload = m.group(1) if m else ""
            svc = app.service_of_workload().get(workload)
            if svc:
                return str(svc)
        candidates = [str(labels[k]) for k in SERVICE_LABELS if labels.get(k)]
        for c in candidates:
            if c in known:
                return c
        if candidates:
            return candidates[0]
        m = _HASHED.match(str(meta.get("name", "")))
        return m.group(1) if m else str(meta.get("name", ""))

    def app_service(self, service: str) -> Any:
        """The app model's description of a service (language, operations, calls), if known."""
        app = getattr(self.twin, "app", None)
        services = getattr(getattr(app, "behaviour", None), "services", None)
        return services.get(service) if isinstance(services, dict) else None

    def instrumented(self, service: str) -> bool:
        """Whether the service emits spans (the app model's ``instrumented``; brokers, databases,
        flagd, the collector and external load clients do not). Their callers' client spans
        still exist, so they appear only as peers. Unknown services count as instrumented."""
        spec = self.app_service(service)
        return bool(getattr(spec, "instrumented", True)) if spec is not None else True

    def main_container(self, service: str, names: list[str]) -> str:
        spec = self.app_service(service)
        preferred = getattr(spec, "container", None) or service
        if preferred in names:
            return preferred
        return names[0] if names else ""

    def instances(self, rec: ObjRecord) -> dict[str, list[Any]]:
        key = (rec.namespace, rec.name)
        cached = self._inst_cache.get(key)
        if cached and cached[0] == len(rec.times):
            return cached[1]
        inst = container_instances(rec)
        self._inst_cache[key] = (len(rec.times), inst)
        return inst
