"""``FinopsReactAgent``: the Agent-protocol wrapper of finops-react's two graphs."""

from __future__ import annotations

from ...core.agent import EventSink
from ...core.output import AgentOutput
from ...core.task import Task
from ...tools.toolsets import parse_tools
from ..sre_react.agent import SREReactAgent


class FinopsReactAgent(SREReactAgent):
    name = "finops-react"
    prompts = "finops_react"

    def tools(self) -> str:
        """The configured selection, with the ``opencost`` tool added when it is not there."""
        tools = self.config.tools
        sel = parse_tools(tools)
        if "opencost" in sel.names() or "opencost" in sel.remove:
            return tools
        return f"{tools},+opencost"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        if task.kind == "anomaly":
            from .anomaly import run_anomaly

            return run_anomaly(self.config, task, events)
        return super().run(task, events)
