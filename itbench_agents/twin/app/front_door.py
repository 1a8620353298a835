"""One HTTP request to an app's service through the Kubernetes API server's service proxy
(``/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy/PATH``), answered as the app would.

The API server's part is the real one: the Service must exist (404 ``services "x" not found``) and
have ready endpoints on the port asked for (503 ``no endpoints available for service "x"``). The
app's part comes from the behaviour model at the twin's now: the request is the service's operation
whose method and path match (``GET /api/products/{productId}`` matches ``GET /api/products/L9ECAV7KIM``;
none: 404 ``404 page not found``), its outcome is the same as the user journeys' probe computes
(``journeys.py``: reachability through the front door, the operation's own errors), and the share
of requests that fail is that outcome's error ratio — request by request, deterministically (a
low-discrepancy sequence per operation, so N requests fail ``round(N × ratio)`` times give or take
one). A failed request answers 503 when the service cannot be reached and 500 otherwise, with the
first symptom as its body. The twin answers at once; the operation's median latency is in a
``Server-Timing: app;dur=MS`` header (a real server may send one too).

Services the app model does not describe (a database, the telemetry pipeline) answer 502, as a
proxy does when what is behind the port does not speak HTTP.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..controllers.kinds import ENDPOINTS, SERVICES
from ..kube.errors import ApiError, not_found
from .journeys import BehaviourModel, first_symptom, front_door_error
from .propagation import Propagation

GOLDEN = 0.6180339887498949
"""The golden ratio's fractional part: request k of an operation fails when frac(k × GOLDEN) < ratio."""


@dataclass(frozen=True)
class ProxyAnswer:
    """What the app answers."""

    status: int
    body: str
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def parse_service_ref(ref: str) -> tuple[str, str]:
    """``[scheme:]name[:port]`` → (name, port or "")."""
    parts = ref.split(":")
    if len(parts) == 3:
        return parts[1], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    return ref, ""


def _template_regex(template: str) -> re.Pattern[str]:
    pieces = re.split(r"(\{[^}/]+\})", template)
    body = "".join("[^/]+" if p.startswith("{") and p.endswith("}") else re.escape(p) for p in pieces)
    return re.compile(body + r"/?")


def match_operation(operations: list[str], method: str, path: str) -> str | None:
    """The operation named ``METHOD /path/{param}`` (or ``HTTP METHOD /path``) that ``method path`` is."""
    path = path.split("?", 1)[0] or "/"
    for op in operations:
        words = op.split()
        if words and words[0] == "HTTP":
            words = words[1:]
        if len(words) != 2 or words[0].upper() != method.upper():
            continue
        if _template_regex(words[1]).fullmatch(path):
            return op
    return None


def _no_endpoints(name: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')


def _has_ready_endpoints(endpoints: dict[str, Any] | None) -> bool:
    return any(subset.get("addresses") for subset in (endpoints or {}).get("subsets") or [])


def _service_port(service: dict[str, Any], port: str) -> dict[str, Any] | None:
    ports = (service.get("spec") or {}).get("ports") or []
    if not port:
        return ports[0] if ports else None
    for p in ports:
        if port in (str(p.get("port", "")), str(p.get("name", ""))):
            return p
    return None


class FrontDoor:
    """The service proxy's answers for one twin's app (kept on its behaviour model)."""

    def __init__(self, model: BehaviourModel) -> None:
        self.model = model
        self.sent: dict[tuple[str, str], int] = {}
        """Requests answered so far, by (service, operation)."""

    def request(self, namespace: str, service_ref: str, method: str, path: str) -> ProxyAnswer:
        """Answer ``method path`` sent to ``service_ref`` in ``namespace``; the API server's refusals
        raise its ``ApiError``."""
        name, port = parse_service_ref(service_ref)
        twin = self.model.twin
        with twin.lock:
            service = twin.store.get(SERVICES, namespace, name)
            if service is None:
                raise not_found("", "services", name)
            if _service_port(service, port) is None or not _has_ready_endpoints(
                twin.store.get(ENDPOINTS, namespace, name)
            ):
                raise _no_endpoints(name)
            return self._answer(namespace, name, method, path)

    def _answer(self, namespace: str, name: str, method: str, path: str) -> ProxyAnswer:
        b = self.model.app.behaviour
        spec = b.services.get(name)
        if namespace != self.model.app.namespace or spec is None or spec.external or not spec.operations:
            return ProxyAnswer(
                502,
                f"Error trying to reach service: the itbench twin models no HTTP server behind service {name!r}",
                "text/plain; charset=utf-8",
            )
        op = match_operation(list(spec.operations), method, path)
        if op is None:
            return ProxyAnswer(404, "404 page not found\n", "text/plain; charset=utf-8")
        twin = self.model.twin
        now = twin.scheduler.now()
        view, fx = self.model._view_and_effects(now)
        result = Propagation(view, fx, self.model.lags, self.model.leaks).run(now)
        outcome = result.outcomes[(name, op)]
        load_deps = b.services[b.load.service].dependencies if b.load.service in b.services else {}
        err, why = front_door_error(view, load_deps, name, outcome.err)
        k = self.sent.get((name, op), 0) + 1
        self.sent[(name, op)] = k
        timing = {"Server-Timing": f"app;dur={outcome.p50:.1f}"}
        if (k * GOLDEN) % 1.0 < err:
            first = why or first_symptom(outcome) or "internal error"
            unreachable = why != "" or not view.serving(name)
            return ProxyAnswer(503 if unreachable else 500, first + "\n", "text/plain; charset=utf-8", timing)
        body = json.dumps({"service": name, "operation": op, "ok": True})
        return ProxyAnswer(200, body, "application/json", timing)
