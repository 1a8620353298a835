"""Trajectory events: the typed records of what happened in an episode, one JSON line each in
``trajectory.jsonl``.

Agents report plain dicts through their ``EventSink`` (``{"type": "tool_call", "tool": "kubectl",
"args": {...}}``); :func:`to_event` validates them into these models. A dict that does not fit
becomes a ``note`` carrying the raw data, so a sloppy agent never crashes its own episode. The
harness stamps wall and twin time and writes them (``harness/trajectory.py``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")

    t_wall: float = 0.0
    """Seconds since the episode started (wall clock)."""
    t_twin: float | None = None
    """Environment (virtual) time, Unix seconds, when known."""
    step: int = 0


class ModelCall(_Event):
    type: Literal["model_call"] = "model_call"
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    prompt: Any = None
    response: Any = None


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    tool: str
    args: Any = None


class Observation(_Event):
    type: Literal["observation"] = "observation"
    tool: str = ""
    content: Any = None
    error: str | None = None


class EnvEvent(_Event):
    type: Literal["env_event"] = "env_event"
    phase: str
    detail: Any = None


class AgentMessage(_Event):
    type: Literal["agent_message"] = "agent_message"
    content: Any = None


class ScoreEvent(_Event):
    type: Literal["score"] = "score"
    scores: dict[str, Any] = Field(default_factory=dict)


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    where: str = ""
    message: str = ""


class WarningEvent(_Event):
    """Something that weakens what the episode's scores mean (e.g. an agent run without a sandbox)."""

    type: Literal["warning"] = "warning"
    where: str = ""
    message: str = ""


class Note(_Event):
    type: Literal["note"] = "note"
    raw: Any = None
    message: str = ""


TrajectoryEvent = Annotated[
    ModelCall
    | ToolCall
    | Observation
    | EnvEvent
    | AgentMessage
    | ScoreEvent
    | ErrorEvent
    | WarningEvent
    | Note,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(TrajectoryEvent)


def to_event(data: dict[str, Any]) -> BaseModel:
    """Validate an agent's dict into a typed event (a ``note`` when it does not fit)."""
    try:
        ev: BaseModel = EVENT_ADAPTER.validate_python(data)
        return ev
    except ValidationError as e:
        return Note(raw=_jsonable(data), message=str(e.errors()[0]["msg"]) if e.errors() else "")


def _jsonable(x: Any) -> Any:
    try:
        json.dumps(x)
        return x
    except (TypeError, ValueError):
        return repr(x)
