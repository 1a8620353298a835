"""The ``error-grepper`` agent for the ``log-triage`` persona (``persona.py``): names the service of
the log's first ERROR line. No LLM; it shows a plug-in agent working on a plug-in persona."""

from __future__ import annotations

import json
import re
from pathlib import Path

from itbench_agents.agents.base import AgentConfig, AgentOutput, EventSink, Task

ERROR = re.compile(r"\bERROR service=(\S+)")


class ErrorGrepper:
    name = "error-grepper"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        work = Path(task.workdir)
        log = work / "app.log"
        events({"type": "tool_call", "tool": "read_file", "args": {"path": str(log)}})
        hit = next((m for m in map(ERROR.search, log.read_text().splitlines()) if m), None)
        events(
            {"type": "observation", "tool": "read_file", "content": hit.group(0) if hit else "no ERROR line"}
        )
        if hit:
            (work / "answer.json").write_text(json.dumps({"service": hit.group(1)}))
        return AgentOutput(steps=1)


def make_agent(config: AgentConfig) -> ErrorGrepper:
    """Names the service of the log's first ERROR line (example plug-in for the log-triage persona)."""
    return ErrorGrepper(config)
