"""Test doubles for the tool tests: a small twin cluster served to real kubectl, plus a fake
observability backend (Prometheus / Loki / Jaeger HTTP APIs) whose answers the test controls.

The twin's own Prometheus / Loki / Jaeger servers replace the fake once they exist; the fake keeps
the tool tests independent of the telemetry model's exact numbers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

NOW = 1_750_000_000.0


def deployment(ns: str, name: str, image: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": name, "image": image, "ports": [{"containerPort": 8080}]}]},
            },
        },
    }


def service(ns: str, name: str, target_port: int = 8080) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 8080, "targetPort": target_port}],
        },
    }


def shop_manifests(ns: str = "shop") -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    for name in ("frontend", "checkout", "cart"):
        objs += [deployment(ns, name, f"registry.local/{name}:1.0"), service(ns, name)]
    return objs


@dataclass
class FakeObservability:
    """Controls what the fake Prometheus / Loki / Jaeger answer."""

    alerts: Callable[[], list[dict[str, Any]]] = lambda: []
    vector: list[dict[str, Any]] = field(default_factory=list)
    matrix: list[dict[str, Any]] = field(default_factory=list)
    streams: list[dict[str, Any]] = field(default_factory=list)
    services: list[str] = field(default_factory=lambda: ["frontend", "checkout", "cart"])
    operations: dict[str, list[str]] = field(default_factory=dict)
    traces: list[dict[str, Any]] = field(default_factory=list)
    dependencies: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)

    def answer(self, path: str, qs: dict[str, list[str]]) -> tuple[int, Any]:
        self.requests.append((path, qs))
        ok = lambda data: (200, {"status": "success", "data": data})  # noqa: E731
        if path in ("/api/v1/query", "/api/v1/query_range"):
            q = qs.get("query", [""])[0]
            if q == "time()":
                return ok({"resultType": "scalar", "result": [NOW, str(NOW)]})
            import promql_parser

            try:
                promql_parser.parse(q)
            except Exception as exc:
                return 400, {
                    "status": "error",
                    "errorType": "bad_data",
                    "error": f'invalid parameter "query": {exc}',
                }
            if path == "/api/v1/query":
                return ok({"resultType": "vector", "result": self.vector})
            return ok({"resultType": "matrix", "result": self.matrix})
        if path == "/api/v1/alerts":
            return ok({"alerts": self.alerts()})
        if path == "/loki/api/v1/query_range":
            q = qs.get("query", [""])[0]
            if not q.strip().startswith("{") and "(" not in q:
                return 400, {"status": "error", "error": "parse error : syntax error: unexpected IDENTIFIER"}
            return ok({"resultType": "streams", "result": self.streams})
        if path == "/api/services":
            return 200, {"data": self.services, "total": len(self.services)}
        if path.startswith("/api/services/") and path.endswith("/operations"):
            svc = path.split("/")[3]
            return 200, {"data": self.operations.get(svc, []), "total": 0}
        if path == "/api/traces":
            svc = qs.get("service", [""])[0]
            found = [
                t for t in self.traces if any(p.get("serviceName") == svc for p in t["processes"].values())
            ]
            return 200, {"data": found}
        if path == "/api/dependencies":
            return 200, {"data": self.dependencies}
        return 404, {"status": "error", "error": f"no route {path}"}


class FakeServer:
    def __init__(self, obs: FakeObservability) -> None:
        self.obs = obs
        fake = obs

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                u = urlparse(self.path)
                self._reply(*fake.answer(u.path, parse_qs(u.query)))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                qs = parse_qs(raw) if "=" in raw and not raw.startswith("{") else {}
                u = urlparse(self.path)
                self._reply(*fake.answer(u.path, qs or parse_qs(u.query)))

            def _reply(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class Env:
    twin: Any
    obs: FakeObservability
    endpoints: Any
    workdir: Path


def start_env(workdir: Path, manifests: list[dict[str, Any]] | None = None) -> tuple[Env, Callable[[], None]]:
    """A bare twin with the shop app, its kube API for kubectl, and the fake observability APIs."""
    from itbench_agents.core.endpoints import Endpoints, kubeconfig_yaml
    from itbench_agents.twin.httpserver import HttpEndpoint
    from itbench_agents.twin.instance import Twin
    from itbench_agents.twin.kube.server import make_kube_handler

    twin = Twin(seed=7)
    twin.apply(manifests if manifests is not None else shop_manifests())
    twin.sync()
    kube = HttpEndpoint(make_kube_handler(twin)).start()
    obs = FakeObservability()
    fake = FakeServer(obs)
    kc = workdir / "kubeconfig"
    kc.write_text(kubeconfig_yaml(kube.url, namespace="shop"))
    eps = Endpoints(
        kubeconfig=str(kc), kube_url=kube.url, prometheus_url=fake.url, loki_url=fake.url, jaeger_url=fake.url
    )

    def stop() -> None:
        kube.stop()
        fake.close()
        twin.close()

    return Env(twin, obs, eps, workdir), stop


def span(
    sid: str, proc: str, op: str, parent: str | None = None, error: bool = False, dur: int = 1000
) -> dict[str, Any]:
    tags = (
        [
            {"key": "error", "type": "bool", "value": True},
            {"key": "otel.status_description", "type": "string", "value": "connection refused"},
        ]
        if error
        else []
    )
    return {
        "traceID": "t1",
        "spanID": sid,
        "operationName": op,
        "references": [{"refType": "CHILD_OF", "traceID": "t1", "spanID": parent}] if parent else [],
        "startTime": int(NOW * 1e6),
        "duration": dur,
        "tags": tags,
        "logs": [],
        "processID": proc,
    }


def error_trace() -> dict[str, Any]:
    return {
        "traceID": "t1",
        "spans": [
            span("a", "p1", "GET /", None, error=True, dur=50_000),
            span("b", "p2", "PlaceOrder", "a", error=True, dur=40_000),
            span("c", "p3", "GetCart", "b", error=True, dur=30_000),
            span("d", "p2", "Audit", "a", error=False),
        ],
        "processes": {
            "p1": {"serviceName": "frontend"},
            "p2": {"serviceName": "checkout"},
            "p3": {"serviceName": "cart"},
        },
    }
