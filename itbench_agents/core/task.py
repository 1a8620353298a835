"""What an agent is told: the :class:`Task` (goal, endpoints, work folder, limits), nothing of the
scenario behind it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .endpoints import Endpoints

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
    persona: Literal["sre", "ciso", "finops"] = "sre"
    endpoints: Endpoints
    workdir: str
    limits: Limits = Field(default_factory=Limits)
    namespaces: list[str] = Field(default_factory=list)
    """Namespaces the agent may act in (the app's); the kubectl tool's allow-list."""
    masked: list[str] = Field(default_factory=list)
    """Observability masked for this episode, e.g. ["traces"]."""
    on_twin: bool = True
    """True when the environment is the twin (the ``wait`` tool then fast-forwards the clock)."""
