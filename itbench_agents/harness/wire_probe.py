"""The functional probe over the wire: the app's user journeys (``journeys.yaml``) sent as HTTP
requests through the Kubernetes API server's service proxy with the official ``kubernetes``
client, and the consumers a journey starts checked in Prometheus with ``prometheus-api-client`` —
public APIs only, so it probes a live cluster as it probes the twin.

A step passes when at most the app's ``probe.max_error_ratio`` of ``requests_per_step`` requests
answer 5xx (or do not answer) and their latency — the server's ``Server-Timing`` duration where it
sends one, the wall time otherwise — stays within ``probe.timeout_ms``. A consumer passes when its
consumer group's lag does not grow over the last two minutes
(``deriv(kafka_consumergroup_lag{consumergroup=...}[2m])``, kafka-exporter's metric); without that
metric the consumer is not checked, and the journey says so.

On the twin, :meth:`~itbench_agents.harness.twin_backend.TwinBackend.journeys` stays the behaviour
model's own probe (the scores do not change); this is the probe a backend without one uses, and
``check_backend()`` requires both to agree on the healthy app.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from .app_data import AppData
from .endstate import JourneyState

SERVER_TIMING = re.compile(r"dur=([0-9.]+)")


@dataclass
class WireProbe:
    kube: Any
    """A ``kubernetes.client.ApiClient`` with the harness's credential."""
    app: AppData
    namespace: str
    prometheus_url: str | None = None
    requests_per_step: int = 20
    examples: dict[str, str] = field(default_factory=dict)
    """Values for path parameters (``{productId}``); the app's ``journeys.yaml`` gives its own."""

    def journeys(self) -> list[JourneyState]:
        from ..twin.app.journeys import journeys_spec

        model = self.app.model
        if model is None:
            return []
        spec = journeys_spec(model)
        examples = {**spec.examples, **self.examples}
        out = []
        for name, journey in spec.journeys.items():
            failed, worst = "", 0.0
            for service, op in journey.steps:
                ratio, why = self._step(service, op, examples)
                worst = max(worst, ratio)
                if why:
                    failed = f"{service} {op}: {why}"
                    break
            unchecked: list[str] = []
            if not failed:
                for service, op in journey.consumers:
                    why, checked = self._consumer(service, op)
                    if not checked:
                        unchecked.append(f"{service} {op}")
                    elif why:
                        failed = f"{service} {op}: {why}"
                        break
            detail = failed or (
                f"{len(journey.steps)} request step(s) succeeded"
                + (f"; not checked (no kafka_consumergroup_lag): {', '.join(unchecked)}" if unchecked else "")
            )
            out.append(JourneyState(name=name, ok=not failed, error_ratio=round(worst, 4), detail=detail))
        return out

    # ------------------------------------------------------------------ request steps
    def _step(self, service: str, op: str, examples: dict[str, str]) -> tuple[float, str]:
        """(failing share, why the step fails or "")."""
        probe = self.app.model.behaviour.probe
        words = op.split()
        method, template = words[-2].upper(), words[-1]
        path = re.sub(r"\{([^}/]+)\}", lambda m: examples.get(m.group(1), "x"), template)
        fails, slow, first = 0, 0.0, ""
        for _ in range(self.requests_per_step):
            status, latency_ms, body = self._request(method, service, path)
            slow = max(slow, latency_ms)
            if status >= 500 or status == 0:
                fails += 1
                first = first or f"HTTP {status or 'no answer'}: {body.strip()[:200]}"
        ratio = fails / self.requests_per_step
        if ratio > probe.max_error_ratio:
            return ratio, f"{ratio:.0%} of requests fail ({first})"
        if slow > probe.timeout_ms:
            return ratio, f"latency {slow:.0f} ms > {probe.timeout_ms:.0f} ms"
        return ratio, ""

    def _request(self, method: str, service: str, path: str) -> tuple[int, float, str]:
        """(status, latency in ms, body) of one request through the service proxy."""
        resource = f"/api/v1/namespaces/{self.namespace}/services/{service}/proxy{path}"
        started = time.monotonic()
        try:
            m, url, headers, body, post = self.kube.param_serialize(
                method=method,
                resource_path=resource,
                header_params={"Accept": "*/*"},
                auth_settings=["BearerToken"],
            )
            resp = self.kube.call_api(
                m, url, header_params=headers, body=body, post_params=post, _request_timeout=30
            )
            resp.read()
            status, answer_headers = resp.status, dict(resp.getheaders() or {})
            text = (resp.data or b"").decode("utf-8", "replace")
        except Exception as e:  # noqa: BLE001 - no answer at all is a failed request
            return 0, (time.monotonic() - started) * 1000, f"{type(e).__name__}: {e}"
        wall = (time.monotonic() - started) * 1000
        timing = SERVER_TIMING.search(answer_headers.get("Server-Timing", "") or "")
        return status, max(wall, float(timing.group(1))) if timing else wall, text

    # ------------------------------------------------------------------ consumers
    def _consumer(self, service: str, op: str) -> tuple[str, bool]:
        """(why the consumer fails or "", whether it could be checked)."""
        topics = self.app.model.behaviour.topics
        found = next(
            (
                (tname, c.group)
                for tname, t in topics.items()
                for c in t.consumers
                if c.service == service and c.op == op
            ),
            None,
        )
        if found is None:
            return "not a consumer of any topic", True
        if not self.prometheus_url:
            return "", False
        from prometheus_api_client import PrometheusConnect

        topic, group = found
        prom = PrometheusConnect(url=self.prometheus_url, disable_ssl=True)
        growth = prom.custom_query(
            f'sum(deriv(kafka_consumergroup_lag{{consumergroup="{group}",topic="{topic}"}}[2m]))'
        )
        if not growth:
            return "", False
        rate = float(growth[0]["value"][1])
        if rate > 0:
            return f"consumer group {group} lag grows ({rate:.1f} messages/s on {topic})", True
        return "", True
