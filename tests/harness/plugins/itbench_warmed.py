"""A plug-in agent whose module has a ``warm(config)`` (as an LLM agent's, which imports its
libraries): the harness calls it before the agent's timed turn (``agents.registry.warm``)."""

from __future__ import annotations

from typing import Any

from itbench_agents.agents.base import AgentConfig
from itbench_agents.core.output import AgentOutput
from itbench_agents.core.task import Task

WARMED: list[str | None] = []
"""The model of each ``warm(config)`` call."""
AT_TURN: list[int] = []
"""How many ``warm`` calls had been made when each turn began."""


def warm(config: AgentConfig) -> None:
    WARMED.append(config.model)


class WarmedAgent:
    name = "warmed"

    def run(self, task: Task, events: Any) -> AgentOutput:
        AT_TURN.append(len(WARMED))
        return AgentOutput()


def make_agent(config: AgentConfig) -> WarmedAgent:
    return WarmedAgent()
