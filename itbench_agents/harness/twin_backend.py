"""The twin as a :class:`~itbench_agents.harness.backend.Backend`: ``Twin.for_app`` on a paused virtual
clock, served on local ports; the clock fast-forwards, the app's data comes from its folder's model
(``app_data.py``), the user journeys' probe from its behaviour model.
"""

from __future__ import annotations

import math
import secrets
import time
from pathlib import Path
from typing import Any

from ..core.endpoints import Endpoints
from ..twin.advance_budget import advanced_by_agent, end_agent_turn, start_agent_turn
from ..twin.clock import DEFAULT_LEAD_S, VirtualClock
from ..twin.gc_pause import collection_paused
from . import gc_policy
from .app_data import AppData
from .backend import FAST_FORWARD, FORK, ProvisionRequest
from .endstate import JourneyState


def harness_clock(history_s: float, grid_s: float = 60.0) -> VirtualClock:
    """The twin's clock in an episode: paused at a multiple of ``grid_s`` (a whole minute unless the
    request asks for more, ``ProvisionRequest.clock_grid_s``), its history at least
    ``DEFAULT_LEAD_S`` behind the wall clock. Paused, it moves only when the harness advances it, so
    deploy, injection, churn, the alert wait and the settle do the same on a fast and a slow
    machine; only the agent's turn (:meth:`TwinBackend.start_agent_turn` to
    :meth:`TwinBackend.end_agent_turn`) runs with wall time, as on a real cluster. Telemetry is keyed
    on time since this start (``twin/telemetry/noise.ms_since``), and the rules' evaluations, scrapes
    and subquery grids fall on multiples of their steps: so an episode is the same whatever minute
    (or, with a grid of an hour, hour) it starts at."""
    grid_s = max(60.0, float(grid_s))
    start = math.floor((time.time() - history_s - DEFAULT_LEAD_S) / grid_s) * grid_s
    return VirtualClock.paused_at(start)


class TwinBackend:
    name = "twin"
    capabilities = frozenset({FAST_FORWARD, FORK})

    def __init__(self, nodes: int = 3) -> None:
        self.nodes = nodes
        """How many nodes the cluster has."""
        self.twin: Any = None
        """The embedded cluster (``twin/instance.py``); None until provisioned."""
        self.admin_token = ""
        self._frozen = False
        """Whether provisioning froze the heap (``gc_policy.freeze``); closing thaws it."""

    @property
    def endpoints(self) -> Endpoints:
        endpoints: Endpoints = self.twin.endpoints
        return endpoints

    def provision(self, request: ProvisionRequest) -> Endpoints:
        from ..twin.instance import Twin

        with collection_paused():  # and frozen before a collection can walk what was built (gc_policy)
            self.twin = Twin.for_app(
                request.app,
                seed=request.seed,
                clock=harness_clock(request.history_s, request.clock_grid_s),
                history_s=request.history_s,
                masked=request.masked,
                past=request.past,
                customize=request.customize,
                addons=request.addons,
                nodes=self.nodes,
            )
            self._frozen = gc_policy.freeze()
        self.admin_token = self.twin.admin_token = secrets.token_urlsafe(32)
        return self.serve(request.folder)

    def now(self) -> float:
        return float(self.twin.now())

    def advance(self, seconds: float, *, step: float) -> None:
        self.twin.advance(seconds, step=step)

    def sync(self) -> None:
        self.twin.sync()

    def start_agent_turn(self, wall_time_s: float) -> None:
        start_agent_turn(self.twin, wall_time_s)  # the twin follows wall time (see harness_clock)

    def end_agent_turn(self) -> None:
        end_agent_turn(self.twin)
        # from here on only the harness asks, and of the alerts only which are pending or firing
        # (endstate.py, firing.py): their rules catch up from their last evaluations where those decide
        if self.twin.alerts is not None:
            self.twin.alerts.ask_states_only()
        # and nothing reads a node's heartbeats: kubelets post them at a quiet past's rate
        self.twin.quiet_until = math.inf

    def advanced_by_agent_s(self) -> float:
        return advanced_by_agent(self.twin)

    @property
    def app_data(self) -> AppData:
        """The app data of the app the twin runs (its folder's model; none for plain manifests)."""
        return AppData(getattr(self.twin, "app", None))

    def call_edges(self, namespace: str) -> list[tuple[str, str, str]]:
        return self.app_data.call_edges(namespace)

    def external_workloads(self) -> set[str]:
        return self.app_data.external_workloads()

    def pipeline_workloads(self) -> list[str]:
        """Workloads of the app's telemetry pipeline (``journeys.yaml``: telemetry.pipeline)."""
        return self.app_data.pipeline_workloads()

    def journeys(self) -> list[JourneyState]:
        """The functional probe of every user journey (the twin's behaviour model)."""
        behaviour = getattr(self.twin, "behaviour", None)
        journeys = getattr(behaviour, "journeys", None)
        if callable(journeys):
            return [
                JourneyState(name=j.name, ok=j.ok, error_ratio=j.error_ratio, detail=j.detail)
                for j in journeys()
            ]
        ok, detail = probe_result(self.twin)
        return [] if ok is None else [JourneyState(name="probe", ok=ok, detail=detail or "")]

    def stop_serving(self) -> None:
        self.twin.stop_serving()

    def serve(self, folder: Path) -> Endpoints:
        endpoints: Endpoints = self.twin.serve(folder)
        return endpoints

    def close(self) -> None:
        if self.twin is not None:
            self.twin.close()
        gc_policy.thaw(self._frozen)
        self._frozen = False


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
