"""What the harness knows of an app from its folder (``scenarios/apps/<app>/``: the behaviour
model's services and their dependencies, ``journeys.yaml``'s telemetry pipeline), whatever serves
it: the twin and a backend that deploys the same app on a real cluster read the same answers.

These are the app data of the :class:`~itbench_agents.harness.backend.Backend` protocol (the call
graph the topology and the churn use, the workloads that run outside the cluster, the telemetry
pipeline); a backend answers them with ``AppData.load(request.app)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Edge = tuple[str, str, str]
"""(namespace, calling workload, called workload)."""


@dataclass(frozen=True)
class AppData:
    model: Any
    """The app's model (``twin/app/model.py``: ``AppModel``); None: plain manifests, no app data."""

    @classmethod
    def load(cls, app: str) -> AppData:
        """The app data of ``app`` (a name under ``scenarios/apps/`` or a folder)."""
        from ..twin.app.loader import load_app

        return cls(load_app(app))

    def _services(self) -> dict[str, Any]:
        services: dict[str, Any] = getattr(getattr(self.model, "behaviour", None), "services", None) or {}
        return services

    def call_edges(self, namespace: str) -> list[Edge]:
        """Who calls whom, by workload, in the app's namespace (``namespace`` when it names none)."""
        services = self._services()
        ns = getattr(self.model, "namespace", namespace)
        edges = []
        for name, svc in services.items():
            for dep in getattr(svc, "dependencies", {}) or {}:
                if dep in services:
                    edges.append((ns, svc.workload or name, services[dep].workload or dep))
        return edges

    def external_workloads(self) -> set[str]:
        """Workloads the call graph names that run outside the cluster (a load client such as wrk2)."""
        return {svc.workload or name for name, svc in self._services().items() if svc.external}

    def pipeline_workloads(self) -> list[str]:
        """Workloads of the app's telemetry pipeline (``journeys.yaml``: telemetry.pipeline)."""
        from ..twin.app.journeys import pipeline_services

        services = self._services()
        out = []
        for name in pipeline_services(self.model):
            svc = services.get(name)
            out.append(getattr(svc, "workload", None) or name)
        return out
