"""The Agent protocol, the event sink it reports through, and the exception that ends it early.

An agent gets a :class:`~itbench_agents.core.task.Task` and returns an
:class:`~itbench_agents.core.output.AgentOutput`. It never sees the scenario file or the ground
truth; mitigation happens on the cluster itself, the output only reports what the agent concluded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from .output import AgentOutput
from .task import Task

EventSink = Callable[[dict[str, Any]], None]
"""Where an agent reports trajectory events (model call, tool call, observation...). The harness
turns each dict into a typed trajectory event; see ``core/events.py``."""


@runtime_checkable
class Agent(Protocol):
    """Anything that can attempt a task."""

    name: str

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        """Attempt ``task``; report progress through ``events``; return the outcome.

        Raise nothing for ordinary failures (bad model output, tool errors): record them and
        return. Exceptions are recorded by the harness as ``agent_error``.
        """
        ...


LimitReason = Literal["max_steps", "timeout", "cost_limit"]


class LimitExceeded(Exception):
    """Raised into the agent when it crosses a limit; the harness records ``reason`` as termination."""

    def __init__(self, reason: LimitReason, message: str) -> None:
        super().__init__(message)
        self.reason: LimitReason = reason
