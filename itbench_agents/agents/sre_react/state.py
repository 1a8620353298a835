"""Graph state of the sre-react agent (react-agent template: InputState + State)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph import add_messages
from langgraph.managed import IsLastStep


@dataclass
class InputState:
    """What a caller (the Agent wrapper, or LangGraph Studio) provides."""

    goal: str = ""
    kind: str = "diagnosis+mitigation"
    """``diagnosis``, ``mitigation`` or ``diagnosis+mitigation``."""


@dataclass
class State(InputState):
    diag_messages: Annotated[Sequence[AnyMessage], add_messages] = field(default_factory=list)
    """The diagnosis conversation (the system prompt is rendered per call, not stored)."""
    mit_messages: Annotated[Sequence[AnyMessage], add_messages] = field(default_factory=list)
    """The mitigation conversation."""
    initial_alerts: str = ""
    steps: int = 0
    """Model calls so far (the agent's steps)."""
    format_errors: int = 0
    repairs: int = 0
    reflections: int = 0
    actions_seen: int = 0
    """How many mitigation actions had been checked against the alerts."""
    alerts_cleared: bool | None = None
    diagnosis: dict[str, Any] | None = None
    diagnosis_error: str | None = None
    diagnosis_step: int | None = None
    diagnosis_time_s: float | None = None
    termination: str | None = None
    """Why the episode ended: completed, max_steps, format_errors, or an LLM abort reason."""
    is_last_step: IsLastStep = field(default=False)
