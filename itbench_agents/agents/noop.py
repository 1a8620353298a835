"""The ``noop`` agent: touches nothing and reports no incident. A floor for every metric."""

from __future__ import annotations

from ..core.agent import EventSink
from ..core.output import AgentOutput, Diagnosis, write_agent_output
from ..core.task import Task
from .base import AgentConfig


class NoopAgent:
    name = "noop"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        events({"type": "agent_message", "content": "noop: reporting no incident"})
        out = AgentOutput(diagnosis=Diagnosis(), steps=0, diagnosis_time_s=0.0)
        write_agent_output(task.workdir, out)
        return out


def make_agent(config: AgentConfig) -> NoopAgent:
    return NoopAgent()
