"""The ``Environment`` protocol: one scenario instance's lifecycle, whatever runs it.

    deploy → inject → wait_for_alerts → task → (agent) → settle → evaluate → teardown

The twin backend is :class:`~itbench_agents.harness.twin_env.TwinEnvironment`; a live-cluster
backend implements the same methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..core.task import Limits, Task
from ..evaluation.topology import Topology
from .records import MitigationScore, Score


class EnvironmentError_(RuntimeError):
    """The environment failed (deploy, injection, alerts that never fire): never the agent's fault."""


@dataclass
class AlertCheck:
    firing: list[str] = field(default_factory=list)
    """Expected alerts that are firing (``name{labels}``)."""
    missing: list[str] = field(default_factory=list)
    """Expected alerts that are not."""
    elapsed_s: float = 0.0
    """Environment seconds waited."""

    @property
    def ok(self) -> bool:
        return not self.missing


class Environment(Protocol):
    def deploy(self) -> None: ...

    def inject(self) -> list[str]:
        """Apply the scenario's faults; returns the operations' descriptions."""
        ...

    def wait_for_alerts(self) -> AlertCheck:
        """Wait (twin: fast-forward) until every expected alert fires or its window passes."""
        ...

    def task(self, limits: Limits) -> Task: ...

    def now(self) -> float:
        """Environment time (twin: virtual Unix seconds)."""
        ...

    def settle(self) -> None: ...

    def evaluate(self) -> MitigationScore: ...

    def topology(self) -> Topology: ...

    def privileged_context(self) -> dict[str, Any]:
        """What the oracle gets through its side channel (scenario, ground truth, mitigation)."""
        ...

    def teardown(self) -> None: ...


@runtime_checkable
class Scorer(Protocol):
    """An environment whose persona scores the end state with named scores (CISO:
    ``personas/ciso/episode.py``): the harness records ``scores()`` instead of ``evaluate()``."""

    def scores(self) -> dict[str, Score]: ...
