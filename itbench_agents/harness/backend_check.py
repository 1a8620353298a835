"""``check_backend()``: the kit any :class:`~itbench_agents.harness.backend.Backend` must pass before
an episode's number on it means anything (Gymnasium's env checker, for backends).

It provisions an app, with a team's namespace beside it (:data:`TEAM_NAMESPACE`: what a scenario's
``namespaces`` and ``setup`` ask for), and checks, through the real client libraries an agent would
use, that the endpoints speak their protocols (the official ``kubernetes`` client on the admin kubeconfig,
``prometheus-api-client`` on Prometheus, the alerts API), that the app is there and healthy (its
workloads ready, its call graph and telemetry pipeline naming workloads that exist, its journeys
passing), that a write through the API is read back after ``sync``, that the clock moves forward
when advanced and the agent's turn starts with nothing advanced, that a ``fork`` backend serves the
same cluster again after ``stop_serving``, that the team's namespace is there with what was deployed
in it, and that ``close`` stops the endpoints (a shared cluster: removes what the check made, the
team's namespace too). Every check runs
whatever failed before it (after a failed provision: none), and says why it failed.
"""

from __future__ import annotations

import math
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from ..scenario.checks import Check
from .backend import FAST_FORWARD, FORK, SHARED_CLUSTER, Backend, ProvisionRequest

PROBE_NAME = "itbench-backend-check"
TEAM_NAMESPACE = "itbench-backend-check-team"
"""The team namespace the kit deploys with the app (a ConfigMap :data:`PROBE_NAME` in it)."""


@dataclass
class BackendReport:
    backend: str
    app: str
    checks: list[Check] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def render(self) -> str:
        lines = [
            f"backend {self.backend} on {self.app}: {'PASS' if self.ok else 'FAIL'} ({self.wall_s:.1f} s)"
        ]
        lines += [
            f"  {'ok  ' if c.ok else 'FAIL'} {c.name}" + (f": {c.detail}" if c.detail else "")
            for c in self.checks
        ]
        return "\n".join(lines)


def check_backend(
    make_backend: Callable[[], Backend], app: str = "chain", namespace: str | None = None, seed: int = 1
) -> BackendReport:
    """Provision ``app`` on a fresh backend from ``make_backend`` and run every check; never raises
    for what the backend does (an exception in a check is that check's failure)."""
    t0 = time.perf_counter()
    try:
        backend = make_backend()
    except Exception as e:  # a backend that cannot be made (a live one without its endpoints)
        report = BackendReport(backend="?", app=app)
        report.checks.append(Check("make the backend", False, f"{type(e).__name__}: {e}"))
        return report
    report = BackendReport(backend=getattr(backend, "name", type(backend).__name__), app=app)
    ns = namespace or _app_namespace(app)
    folder = Path(tempfile.mkdtemp(prefix="itbench-backend-check-"))

    def run(name: str, fn: Callable[[], str]) -> bool:
        try:
            detail = fn()
            report.checks.append(Check(name, True, detail))
            return True
        except Exception as e:  # the check's failure, with why
            why = str(e) if isinstance(e, AssertionError) and str(e) else f"{type(e).__name__}: {e}"
            if not isinstance(e, AssertionError):
                why += " @ " + traceback.extract_tb(e.__traceback__)[-1].name
            report.checks.append(Check(name, False, why))
            return False

    caps = frozenset(getattr(backend, "capabilities", frozenset()))
    try:
        if not run("provision", lambda: _provision(backend, app, seed, folder)):
            return report
        run("capabilities", lambda: _capabilities(caps))
        run("a team namespace deployed with the app", lambda: _team(backend))
        run("kubernetes API (official client)", lambda: _kube(backend, ns))
        run("app ready", lambda: _ready(backend, ns))
        run("prometheus API (prometheus-api-client)", lambda: _prometheus(backend))
        run("alerts API", lambda: _alerts(backend))
        run("write, sync, read back", lambda: _write(backend, ns))
        run("app data: call graph", lambda: _edges(backend, ns))
        run("app data: telemetry pipeline", lambda: _pipeline(backend, ns))
        run("app data: journeys pass on the healthy app", lambda: _journeys(backend))
        run("the journeys over the wire (service proxy) agree", lambda: _wire_probe(backend, app, ns))
        run("clock advances", lambda: _clock(backend, caps))
        run("agent turn", lambda: _turn(backend))
        if FORK in caps:
            run("fork: serve again after stop_serving", lambda: _fork(backend, ns, folder))
        if SHARED_CLUSTER in caps:
            run("close restores the cluster", lambda: _restore(backend, ns))
        else:
            run("close stops the endpoints", lambda: _close(backend))
    finally:
        report.wall_s = time.perf_counter() - t0
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return report


def _app_namespace(app: str) -> str:
    from ..twin.app.loader import load_app

    return str(load_app(app).namespace)


def _provision(backend: Backend, app: str, seed: int, folder: Path) -> str:
    team = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEAM_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": PROBE_NAME, "namespace": TEAM_NAMESPACE},
            "data": {"deployed": "with the app"},
        },
    ]
    request = ProvisionRequest(
        app=app,
        seed=seed,
        history_s=600.0,
        folder=folder / "a",
        namespaces=[TEAM_NAMESPACE],
        customize=lambda manifests: [*manifests, *team],
    )
    endpoints = backend.provision(request)
    assert endpoints.kube_url and endpoints.prometheus_url, (
        f"endpoints without a Kubernetes or Prometheus URL: {endpoints}"
    )
    assert Path(endpoints.kubeconfig).is_file(), f"no kubeconfig at {endpoints.kubeconfig!r}"
    assert backend.admin_token or callable(getattr(backend, "admin_api", None)), (
        "no admin token (nor an admin_api) after provision"
    )
    assert backend.endpoints == endpoints, "endpoints differ from what provision returned"
    return endpoints.kube_url


def _capabilities(caps: frozenset[str]) -> str:
    from .backend import CAPABILITIES

    unknown = sorted(caps - set(CAPABILITIES))
    assert not unknown, f"unknown capabilities {unknown} (known: {', '.join(CAPABILITIES)})"
    return ", ".join(sorted(caps)) or "none"


def _client(backend: Backend) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=backend.endpoints.kubeconfig)


def _kube(backend: Backend, ns: str) -> str:
    from kubernetes import client

    api = _client(backend)
    try:
        version = client.VersionApi(api).get_code()
        listed: list[Any] = client.CoreV1Api(api).list_namespace().items
        names = [n.metadata.name for n in listed]
        assert ns in names, f"namespace {ns!r} not among {names}"
        deployments = client.AppsV1Api(api).list_namespaced_deployment(ns).items
        assert deployments, f"no Deployment in {ns}"
    finally:
        api.close()
    return f"version {version.git_version}; {len(deployments)} Deployment(s) in {ns}"


def _ready(backend: Backend, ns: str) -> str:
    from kubernetes import client

    backend.sync()
    api = _client(backend)
    try:
        deployments: list[Any] = client.AppsV1Api(api).list_namespaced_deployment(ns).items
    finally:
        api.close()
    short = [
        f"{d.metadata.name} {d.status.ready_replicas or 0}/{d.spec.replicas}"
        for d in deployments
        if (d.spec.replicas or 0) > 0 and (d.status.ready_replicas or 0) < (d.spec.replicas or 0)
    ]
    assert not short, "not ready: " + ", ".join(short)
    return f"{len(deployments)} Deployment(s) ready"


def _prometheus(backend: Backend) -> str:
    from prometheus_api_client import PrometheusConnect

    prom = PrometheusConnect(url=backend.endpoints.prometheus_url, disable_ssl=True)
    up = prom.custom_query("up")
    assert up, "`up` returned no series"
    return f"{len(up)} `up` series"


def _alerts(backend: Backend) -> str:
    r = requests.get(str(backend.endpoints.prometheus_url).rstrip("/") + "/api/v1/alerts", timeout=30)
    r.raise_for_status()
    body = r.json()
    assert body.get("status") == "success", f"alerts API answered {body}"
    return f"{len(body.get('data', {}).get('alerts', []))} alert(s)"


def _write(backend: Backend, ns: str) -> str:
    from kubernetes import client

    api = _client(backend)
    try:
        core = client.CoreV1Api(api)
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=PROBE_NAME), data={"k": "v"})
        core.create_namespaced_config_map(ns, body)
        backend.sync()
        got = core.read_namespaced_config_map(PROBE_NAME, ns)
        assert got.data == {"k": "v"}, f"read back {got.data}"
    finally:
        api.close()
    return f"ConfigMap {ns}/{PROBE_NAME}"


def _workloads(backend: Backend, ns: str) -> set[str]:
    from kubernetes import client

    api = _client(backend)
    try:
        apps = client.AppsV1Api(api)
        objs: list[Any] = [
            *apps.list_namespaced_deployment(ns).items,
            *apps.list_namespaced_stateful_set(ns).items,
        ]
        names = {str(o.metadata.name) for o in objs}
    finally:
        api.close()
    return names


def _edges(backend: Backend, ns: str) -> str:
    edges = backend.call_edges(ns)
    assert edges, "no call edges"
    known = _workloads(backend, ns)
    outside = backend.external_workloads()
    bad = sorted({w for _, a, b in edges for w in (a, b) if w not in known and w not in outside})
    assert not bad, f"edges name workloads that do not exist (nor run outside the cluster): {bad}"
    inside = sorted(w for w in outside if w in known)
    assert not inside, f"workloads said to run outside the cluster are in it: {inside}"
    return f"{len(edges)} edge(s)" + (f"; {len(outside)} caller(s) outside the cluster" if outside else "")


def _pipeline(backend: Backend, ns: str) -> str:
    pipeline = backend.pipeline_workloads()
    known = _workloads(backend, ns)
    bad = [w for w in pipeline if w not in known]
    assert not bad, f"pipeline workloads that do not exist: {bad}"
    return f"{len(pipeline)} workload(s)"


def _journeys(backend: Backend) -> str:
    journeys = backend.journeys()
    failing = [f"{j.name}: {j.detail}" for j in journeys if not j.ok]
    assert not failing, "failing on the healthy app: " + "; ".join(failing)
    return f"{len(journeys)} journey(s) pass"


def _wire_probe(backend: Backend, app: str, ns: str) -> str:
    from .app_data import AppData
    from .wire_probe import WireProbe

    wire = WireProbe(
        _client(backend), AppData.load(app), ns, prometheus_url=backend.endpoints.prometheus_url
    ).journeys()
    own = {j.name: j.ok for j in backend.journeys()}
    over_wire = {j.name: j.ok for j in wire}
    assert over_wire == own, f"over the wire {over_wire}, the backend's own {own}"
    unchecked = [j.name for j in wire if "not checked" in j.detail]
    return f"{len(wire)} journey(s) agree" + (
        f" ({len(unchecked)} with consumers not checked)" if unchecked else ""
    )


def _clock(backend: Backend, caps: frozenset[str]) -> str:
    before = backend.now()
    assert math.isfinite(before) and before > 1e9, f"now() = {before!r} is not epoch seconds"
    seconds = 60.0 if FAST_FORWARD in caps else 2.0
    w0 = time.perf_counter()
    backend.advance(seconds, step=15.0)
    took = time.perf_counter() - w0
    moved = backend.now() - before
    assert moved >= seconds - 1e-6, f"advance({seconds:g}) moved the clock {moved:g} s"
    if FAST_FORWARD in caps:
        assert took < seconds, f"fast_forward, yet advance({seconds:g}) took {took:.1f} s of wall time"
    return f"advance({seconds:g}) moved {moved:g} s in {took:.2f} s"


def _turn(backend: Backend) -> str:
    backend.start_agent_turn(30.0)
    try:
        advanced = backend.advanced_by_agent_s()
        assert advanced == 0.0, f"{advanced} s advanced at the start of the turn"
    finally:
        backend.end_agent_turn()
    return "nothing advanced at the start"


def _fork(backend: Backend, ns: str, folder: Path) -> str:
    old = backend.endpoints.kube_url
    backend.stop_serving()
    assert not _answers(old), f"{old} still answers after stop_serving"
    endpoints = backend.serve(folder / "b")
    assert endpoints.kube_url != old or _answers(endpoints.kube_url), "not served again"
    from kubernetes import client

    api = _client(backend)
    try:
        got = client.CoreV1Api(api).read_namespaced_config_map(PROBE_NAME, ns)
    finally:
        api.close()
    assert got.data == {"k": "v"}, "the cluster served again lost what was written before"
    return f"served again at {endpoints.kube_url}"


def _close(backend: Backend) -> str:
    urls = [u for u in (backend.endpoints.kube_url, backend.endpoints.prometheus_url) if u]
    backend.close()
    still = [u for u in urls if _answers(u)]
    assert not still, f"still answering after close: {still}"
    return "endpoints closed"


def _team(backend: Backend) -> str:
    from kubernetes import client

    api = _client(backend)
    try:
        cm = client.CoreV1Api(api).read_namespaced_config_map(PROBE_NAME, TEAM_NAMESPACE)
    finally:
        api.close()
    assert cm.data == {"deployed": "with the app"}, f"{TEAM_NAMESPACE}/{PROBE_NAME} holds {cm.data}"
    return f"{TEAM_NAMESPACE} with its ConfigMap"


def _restore(backend: Backend, ns: str) -> str:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    backend.close()
    api = _client(backend)
    core = client.CoreV1Api(api)
    made = {
        f"ConfigMap {ns}/{PROBE_NAME}, written during the check": lambda: core.read_namespaced_config_map(
            PROBE_NAME, ns
        ),
        f"namespace {TEAM_NAMESPACE}, deployed with the app": lambda: core.read_namespace(TEAM_NAMESPACE),
    }
    try:
        for what, read in made.items():
            try:
                read()
            except ApiException as e:
                assert e.status == 404, f"reading {what} after close: {e.status} {e.reason}"
            else:
                raise AssertionError(f"{what}, is still there")
    finally:
        api.close()
    return f"what the check wrote is gone; {backend.endpoints.kube_url} still serves"


def _answers(url: str) -> bool:
    try:
        requests.get(url.rstrip("/") + "/version", timeout=2)
    except requests.RequestException:
        return False
    return True
