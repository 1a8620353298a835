"""The backend protocol: what the harness needs of the machinery behind an episode's endpoints —
provision an app and serve it, a clock it can read and (where it can) fast-forward, the app's data
(its call graph, its user journeys, its telemetry pipeline) and a teardown.

A backend whose kubeconfig authenticates otherwise than with a bearer token (exec plugins, client
certificates) also offers ``admin_api()``, the harness's client (``twin_env.admin_api``).

Everything else an episode does — the baseline, the faults, the alert wait, the agent's credential,
the end-state checks, the topology — goes over the endpoints' wire protocols (the Kubernetes and
Prometheus APIs), so it serves every backend unchanged (``twin_env.py``). The twin is the first
backend (``twin_backend.py``); ``check_backend()`` (``backend_check.py``) is the kit any backend must
pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..core.endpoints import Endpoints
from .endstate import JourneyState

FAST_FORWARD = "fast_forward"
"""The clock can be advanced (a twin); without it ``advance`` waits in real time (a live cluster)."""
FORK = "fork"
"""A prepared backend can stop serving and be served again from a forked process (``shared.py``)."""
SHARED_CLUSTER = "shared_cluster"
"""The cluster outlives the backend (a live one): ``close`` restores it — what the episode created is
gone, the app as its manifests say — instead of tearing it down."""
CAPABILITIES = (FAST_FORWARD, FORK, SHARED_CLUSTER)


@dataclass
class ProvisionRequest:
    """What an episode asks a backend to provision."""

    app: str
    """The app's name (``otel-demo``, ``hotel-reservation``, ...)."""
    seed: int
    history_s: float
    """Seconds of telemetry history the app must have before the fault."""
    folder: Path
    """The harness's private folder: the admin kubeconfig and endpoints file go here."""
    masked: list[str] = field(default_factory=list)
    """Telemetry sources the agent must not see (``traces``)."""
    past: bool = False
    """Whether the cluster should carry a past (rollout history) before the episode."""
    customize: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    """Changes the app's manifests before they are applied (the protected baseline, what the
    scenario deploys with the app)."""
    namespaces: list[str] = field(default_factory=list)
    """The task's namespaces beside the app's (a team's other namespaces; ``customize`` adds their
    Namespace objects): a backend that waits for the app to be ready and quiet waits for these too."""
    addons: list[Any] = field(default_factory=list)
    """What runs beside the app for the scenario's persona (FinOps: OpenCost)."""
    clock_grid_s: float = 60.0
    """A twin starts at a multiple of this many seconds: the longest step its alert rules'
    subqueries run on (FinOps' cost rules: ``[7d:1h]``), so that their grids fall at the same
    moments of every episode (``twin_backend.harness_clock``). A live cluster has its own clock."""


class Backend(Protocol):
    name: str
    capabilities: frozenset[str]
    admin_token: str
    """The harness's own credential on the Kubernetes API (never the agent's)."""

    @property
    def endpoints(self) -> Endpoints:
        """Where the app is served now (admin kubeconfig, Prometheus, Loki, Jaeger, ...)."""
        ...

    def provision(self, request: ProvisionRequest) -> Endpoints:
        """Deploy the app, serve it, return its endpoints (raise on failure)."""
        ...

    def now(self) -> float:
        """The cluster's time (epoch seconds)."""
        ...

    def advance(self, seconds: float, *, step: float) -> None:
        """Let ``seconds`` of cluster time pass (fast-forwarded where the backend can)."""
        ...

    def sync(self) -> None:
        """Let the controllers catch up with the API's writes (a no-op on a live cluster)."""
        ...

    def start_agent_turn(self, wall_time_s: float) -> None:
        """The agent's turn begins: from now on the clock follows wall time, and the cluster time
        the agent fast-forwards counts against ``wall_time_s``."""
        ...

    def end_agent_turn(self) -> None: ...

    def advanced_by_agent_s(self) -> float:
        """Cluster seconds the agent fast-forwarded since its turn began."""
        ...

    def call_edges(self, namespace: str) -> list[tuple[str, str, str]]:
        """The app's call graph: ``(namespace, caller workload, callee workload)``."""
        ...

    def external_workloads(self) -> set[str]:
        """Callers of the call graph that run outside the cluster (a load client), so have no
        workload in it."""
        ...

    def pipeline_workloads(self) -> list[str]:
        """The workloads of the app's telemetry pipeline."""
        ...

    def journeys(self) -> list[JourneyState]:
        """The functional probe of every user journey now (empty when the app declares none)."""
        ...

    def stop_serving(self) -> None:
        """``fork``: stop serving, keep the prepared cluster."""
        ...

    def serve(self, folder: Path) -> Endpoints:
        """``fork``: serve the prepared cluster again (new endpoints, files in ``folder``)."""
        ...

    def close(self) -> None:
        """Tear the cluster down; its endpoints stop answering (``shared_cluster``: restore it)."""
        ...
