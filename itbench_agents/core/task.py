"""What an agent is told: the :class:`Task` (goal, endpoints, work folder, limits), nothing of the
scenario behind it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from .endpoints import Endpoints

PersonaName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
"""A persona's name (the built-ins ``sre``, ``ciso``, ``finops``, or a plug-in's): lower case, digits, ``-``."""
TaskKind = Literal["diagnosis", "mitigation", "diagnosis+mitigation", "compliance", "anomaly"]


class Limits(BaseModel):
    """Limits the harness enforces on one episode."""

    max_steps: int = 50
    wall_time_s: float = 900.0
    max_tokens: int | None = None
    max_cost_usd: float | None = None


class Task(BaseModel):
    """What the agent is told. Nothing here reveals the scenario id, faults or ground truth."""

    model_config = ConfigDict(extra="forbid")

    goal: str
    kind: TaskKind = "diagnosis+mitigation"
    persona: PersonaName = "sre"
    """Whose task: ``sre``, ``ciso``, ``finops`` or a plug-in persona's name."""
    endpoints: Endpoints
    workdir: str
    limits: Limits = Field(default_factory=Limits)
    namespaces: list[str] = Field(default_factory=list)
    """Namespaces the agent may act in (the app's); the kubectl tool's allow-list."""
    masked: list[str] = Field(default_factory=list)
    """Observability masked for this episode, e.g. ["traces"]."""
    on_twin: bool = True
    """True when the environment is the twin (the ``wait`` tool then fast-forwards the clock)."""
