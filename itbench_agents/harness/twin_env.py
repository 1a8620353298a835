"""The twin backend of :class:`~itbench_agents.harness.environment.Environment`.

deploy = ``Twin.for_app`` + ``serve`` (kubeconfig and URLs in the episode's work folder);
inject = the scenario's operations through the Kubernetes REST API (exactly what would run
against a live cluster); wait_for_alerts = fast-forward the virtual clock in steps, polling the
Prometheus alerts API; settle = fast-forward by the settle period; evaluate = expected alerts
resolved AND the app's functional probe passes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from pathlib import Path
from typing import Any

import requests

from ..agents.base import Limits, Task
from ..evaluation.topology import Topology, topology_from_objects
from ..scenario.inject import apply_operations
from ..scenario.kubeapi import KubeApi, KubeApiError
from ..scenario.spec import ExpectedAlert, Scenario
from .environment import AlertCheck, EnvironmentError_
from .goal import sre_goal
from .records import MitigationScore

ALERT_POLL_S = 30.0
CONTROL_WAIT_S = 180.0

TOPOLOGY_KINDS = [
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "ResourceQuota"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
]


def alert_label(a: ExpectedAlert) -> str:
    if not a.labels:
        return a.name
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(a.labels.items()))
    return f"{a.name}{{{inner}}}"


def firing_alerts(prometheus_url: str) -> list[dict[str, Any]]:
    """Alerts in state ``firing`` from ``GET /api/v1/alerts`` (Prometheus' wire format)."""
    r = requests.get(prometheus_url.rstrip("/") + "/api/v1/alerts", timeout=30)
    r.raise_for_status()
    alerts = r.json().get("data", {}).get("alerts", [])
    return [a for a in alerts if a.get("state") == "firing"]


def match_expected(
    expected: list[ExpectedAlert], firing: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    hit: list[str] = []
    miss: list[str] = []
    for e in expected:
        ok = any(
            (f.get("labels") or {}).get("alertname") == e.name
            and all((f.get("labels") or {}).get(k) == v for k, v in e.labels.items())
            for f in firing
        )
        (hit if ok else miss).append(alert_label(e))
    return hit, miss


def probe_result(twin: Any) -> tuple[bool | None, str | None]:
    """Run the app's functional probe; accepts a bool, an object with ``ok``/``passed`` or a dict."""
    behaviour = getattr(twin, "behaviour", None)
    probe = getattr(behaviour, "probe", None)
    if probe is None:
        return None, "the app has no functional probe"
    res = probe()
    if isinstance(res, bool):
        return res, None
    if isinstance(res, dict):
        ok = res.get("ok", res.get("passed"))
        return (bool(ok) if ok is not None else None), str(
            res.get("detail") or res.get("message") or ""
        ) or None
    ok = getattr(res, "ok", getattr(res, "passed", None))
    detail = getattr(res, "detail", None) or getattr(res, "message", None) or str(res)
    return (bool(ok) if ok is not None else None), (str(detail) if detail else None)


class TwinEnvironment:
    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int,
        workdir: str | Path,
        masked: list[str] | None = None,
        history_s: float = 3600.0,
        settle_s: float | None = None,
        step_s: float = 15.0,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.workdir = Path(workdir)
        self.masked = list(masked or [])
        self.history_s = history_s
        self.settle_s = scenario.settle_s if settle_s is None else settle_s
        self.step_s = step_s
        self.twin: Any = None
        self.api: KubeApi | None = None
        self.injected_at: float | None = None

    # ------------------------------------------------------------------ lifecycle
    def deploy(self) -> None:
        from ..twin.instance import Twin

        try:
            self.twin = Twin.for_app(
                self.scenario.app, seed=self.seed, history_s=self.history_s, masked=self.masked
            )
            endpoints = self.twin.serve(self.workdir)
        except Exception as e:
            raise EnvironmentError_(f"deploy {self.scenario.app}: {type(e).__name__}: {e}") from e
        self.api = KubeApi(endpoints.kube_url)

    @property
    def endpoints(self) -> Any:
        return self.twin.endpoints

    def now(self) -> float:
        return float(self.twin.now())

    def _now_dt(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(self.now(), _dt.UTC)

    def inject(self) -> list[str]:
        assert self.api is not None
        try:
            done = apply_operations(self.api, self.scenario.faults, self._now_dt)
        except Exception as e:
            raise EnvironmentError_(f"inject: {e}") from e
        self.injected_at = self.now()
        self.twin.sync()
        return done

    def check_alerts(self) -> AlertCheck:
        firing = firing_alerts(self.endpoints.prometheus_url)
        hit, miss = match_expected(self.scenario.alerts, firing)
        return AlertCheck(hit, miss)

    def wait_for_alerts(self) -> AlertCheck:
        start = self.now()
        if self.scenario.control or not self.scenario.alerts:
            self.twin.advance(CONTROL_WAIT_S, step=self.step_s)
            return AlertCheck([], [], self.now() - start)
        limit = max(a.window_s for a in self.scenario.alerts)
        self.twin.advance(min(ALERT_POLL_S * 2, limit), step=self.step_s)  # `for:` clauses need time
        check = self.check_alerts()
        while not check.ok and self.now() - start < limit:
            self.twin.advance(ALERT_POLL_S, step=self.step_s)
            check = self.check_alerts()
        check.elapsed_s = self.now() - start
        return check

    def task(self, limits: Limits) -> Task:
        return Task(
            goal=sre_goal(self.scenario.namespace),
            kind="diagnosis+mitigation",
            persona=self.scenario.persona,
            endpoints=self.endpoints,
            workdir=str(self.workdir),
            limits=limits,
            namespaces=[self.scenario.namespace],
            masked=self.masked,
            on_twin=True,
        )

    def settle(self) -> None:
        self.twin.advance(self.settle_s, step=self.step_s)

    def evaluate(self) -> MitigationScore:
        if self.scenario.control:
            ok, detail = probe_result(self.twin)
            return MitigationScore(applicable=False, passed=bool(ok), probe_ok=ok, probe_detail=detail)
        check = self.check_alerts()
        ok, detail = probe_result(self.twin)
        passed = not check.firing and ok is True
        reason = None
        if check.firing:
            reason = "alerts still firing: " + ", ".join(check.firing)
        elif ok is not True:
            reason = f"functional probe failed: {detail}"
        return MitigationScore(
            passed=passed, alerts_firing=check.firing, probe_ok=ok, probe_detail=detail, reason=reason
        )

    def call_edges(self) -> list[tuple[str, str, str]]:
        app = getattr(self.twin, "app", None)
        behaviour = getattr(app, "behaviour", None)
        services = getattr(behaviour, "services", None) or {}
        ns = getattr(app, "namespace", self.scenario.namespace)
        edges = []
        for name, svc in services.items():
            for dep in getattr(svc, "dependencies", {}) or {}:
                if dep in services:
                    edges.append((ns, svc.workload or name, services[dep].workload or dep))
        return edges

    def topology(self) -> Topology:
        assert self.api is not None
        objs: list[dict[str, Any]] = []
        for api_version, kind in TOPOLOGY_KINDS:
            try:
                objs.extend(self.api.list(api_version, kind, self.scenario.namespace))
            except KubeApiError:
                continue
        with contextlib.suppress(KubeApiError):
            objs.extend(self.api.list("v1", "Node"))
        return topology_from_objects(objs, self.call_edges())

    def privileged_context(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "kube_url": self.endpoints.kube_url, "now": self._now_dt}

    def teardown(self) -> None:
        if self.twin is not None:
            self.twin.close()
