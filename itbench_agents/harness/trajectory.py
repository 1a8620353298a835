"""Trajectory events: a typed, append-only log of one episode (``trajectory.jsonl``).

Agents report plain dicts through their ``EventSink`` (``{"type": "tool_call", "tool": "kubectl",
"args": {...}}``); the harness validates them into these models, stamps wall and twin time and
appends one JSON line each. A dict that does not fit becomes a ``note`` carrying the raw data, so a
sloppy agent never crashes its own episode.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
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


class TrajectoryWriter:
    """Appends events to ``trajectory.jsonl`` (thread-safe; one line per event)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.count = 0

    def write(self, event: BaseModel) -> None:
        line = (
            event.model_dump_json(exclude_none=False, fallback=repr)
            if hasattr(event, "model_dump_json")
            else ""
        )
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()


def read_trajectory(path: str | Path) -> list[BaseModel]:
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            out.append(to_event(json.loads(line)))
        except json.JSONDecodeError:
            out.append(Note(raw=line))
    return out
