"""The persona plug-in point: what the harness asks of a persona (SRE, CISO, FinOps, or one an
installed package brings through the ``itbench_agents.personas`` entry points).

A persona names a suite (``--suite <name>[:tag]``), brings the scenarios of its own formats (its
*library*: CISO's Kyverno tasks, FinOps' billing anomalies), says how those are tagged and recorded,
builds the environment an episode of them runs in, and may extend the twin for scenarios of the
twin's own format that belong to it (FinOps: OpenCost beside the app, cost checks, proximity).
The harness finds personas by name (``harness/personas.py``) and never imports their packages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class PersonaScenario(Protocol):
    """What every scenario has, whatever its persona's format: an id that starts with the persona's
    name (``ciso/...``), the persona, and tags (``--tag``, ``--suite persona:tag``)."""

    @property
    def id(self) -> str: ...

    @property
    def persona(self) -> str: ...

    @property
    def tags(self) -> list[str]: ...


@dataclass(frozen=True)
class EnvironmentRequest:
    """What an episode asks of a persona's environment: which scenario, which seed, the agent's work
    folder, and the run's options for environments that model a cluster with a past."""

    scenario: Any
    seed: int
    workdir: Path
    masked: list[str] = field(default_factory=list)
    history_s: float = 3600.0
    settle_s: float | None = None
    churn: str = "default"


class Persona(Protocol):
    """A persona, as the harness sees it."""

    name: str
    """The suite's name and the first segment of its scenario ids (``sre``, ``ciso``, ``finops``)."""
    description: str

    def library(self) -> Sequence[PersonaScenario]:
        """The scenarios of this persona's own formats (not the twin's scenario files, which the
        scenario registry reads); empty for a persona whose scenarios are all twin scenario files."""
        ...

    def tags(self, scenario: PersonaScenario) -> set[str]:
        """What ``--tag`` and ``--suite persona:tag`` match on one of its library's scenarios."""
        ...

    def record_fields(self, scenario: PersonaScenario) -> dict[str, Any]:
        """What an episode record says about one of its library's scenarios: ``category`` and
        ``bucket`` (the report's grouping), beside ``persona``."""
        ...

    def make_environment(self, request: EnvironmentRequest) -> Any:
        """The environment an episode of one of its library's scenarios runs in (the harness's
        ``Environment`` protocol, plus ``scores()`` where it scores by named scores)."""
        ...

    def twin_extension(self, scenario: Any) -> Any | None:
        """For a twin scenario file of this persona: what it adds to the twin environment (the
        harness's ``TwinExtension`` protocol): at the least the agent's goal, which the harness does
        not word itself. None where the persona has no twin scenario files (an episode of one is
        then refused with the reason)."""
        ...
