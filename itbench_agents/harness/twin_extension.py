"""What a persona adds to the twin environment for its twin scenario files: its goal text, and
whatever it runs, checks and scores beside the twin scenario's own diagnosis and mitigation (SRE:
the goal alone, ``personas/sre/twin_extension.py``; FinOps: OpenCost beside the app, a week of
past, cost checks and proximity scores, ``personas/finops/twin_extension.py``).

:class:`~itbench_agents.harness.twin_env.TwinEnvironment` asks the scenario's persona for one
(``Persona.twin_extension``) and calls it at each phase; the harness words no goal of its own, so
a persona whose scenarios are twin files must give one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..core.score import Score

if TYPE_CHECKING:
    from ..k8s.client import KubeApi
    from ..scenario.spec import Scenario
    from .backend import Backend
    from .records import EndStateCheckRecord

ALERT_POLL_S = 30.0
"""How often waiting for the expected alerts polls Prometheus, unless the extension says otherwise."""


class ExtendedEnvironment(Protocol):
    """What an extension reads of the environment it extends (``twin_env.TwinEnvironment``)."""

    scenario: Scenario
    api: KubeApi | None
    backend: Backend
    injected_at: float | None

    @property
    def twin(self) -> Any:
        """The embedded cluster where the backend is the twin (None otherwise)."""
        ...

    def now(self) -> float: ...


class TwinExtension(Protocol):
    history_s: float
    """The least past the persona's checks need (seconds of twin history before the fault)."""
    churn_past: bool
    """Whether the churn's past (rollout history made before the fault) suits it; False where the
    persona's own history is the past (FinOps: a week, whose rollouts would be a week long)."""
    alert_poll_s: float
    """How often waiting for the expected alerts polls Prometheus (cost rules run once a minute)."""
    clock_grid_s: float
    """The twin starts at a multiple of this (``ProvisionRequest.clock_grid_s``): the longest
    subquery step of the persona's alert rules (FinOps: an hour)."""

    def goal(self, namespaces: list[str]) -> str:
        """The agent's goal text for the task's namespaces (the app's first)."""
        ...

    def addons(self) -> list[Any]:
        """The twin addons it runs beside the app."""
        ...

    def deployed(self, env: ExtendedEnvironment) -> None:
        """After the app is deployed and served (raise ``EnvironmentError_`` on failure)."""
        ...

    def baseline_taken(self, env: ExtendedEnvironment) -> None:
        """Right after the baseline, before the faults."""
        ...

    def injected(self, env: ExtendedEnvironment) -> None:
        """Right after the faults."""
        ...

    def end_state_checks(self, env: ExtendedEnvironment) -> list[EndStateCheckRecord]:
        """Its own mitigation checks, run last (they may change the cluster); fault scenarios only."""
        ...

    def scores(self, env: ExtendedEnvironment) -> dict[str, Score]:
        """Its named scores of the end state."""
        ...
