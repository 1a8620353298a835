"""The ``replica-restorer`` agent: reads the firing alerts' runbooks, names every Deployment scaled
to zero as the root cause and, when the task asks for mitigation, scales it back to one replica.

A deliberately narrow agent: it shows the plug-in seams (an agent factory, the shared tools, a
plug-in tool by name), not a way to diagnose incidents.
"""

from __future__ import annotations

from typing import Any

from itbench_agents.agents.base import (
    AgentConfig,
    AgentOutput,
    Diagnosis,
    DiagnosisEntity,
    EventSink,
    Task,
)
from itbench_agents.tools.alerts import firing
from itbench_agents.tools.context import ToolContext
from itbench_agents.tools.kubectl import kubectl_json
from itbench_agents.tools.registry import get_tool


class ReplicaRestorer:
    name = "replica-restorer"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    def _tool(self, ctx: ToolContext, name: str, args: dict[str, Any], events: EventSink) -> str:
        events({"type": "tool_call", "tool": name, "args": args})
        result = get_tool(name).invoke(ctx, args)
        events({"type": "observation", "tool": name, "content": result.output, "error": result.error or None})
        return result.output

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        ctx = ToolContext.for_task(task)
        names = sorted({a.get("labels", {}).get("alertname", "") for a in firing(ctx)} - {""})
        guidance = [self._tool(ctx, "runbook", {"alert": n}, events) for n in names]
        entities, actions = [], []
        for ns in task.namespaces:
            deployments = kubectl_json(ctx, f"get deployments -n {ns}").get("items", [])
            for d in deployments:
                if d["spec"].get("replicas") != 0:
                    continue
                name = d["metadata"]["name"]
                entities.append(
                    DiagnosisEntity(
                        name=f"{ns}/Deployment/{name}",
                        contributing_factor=True,
                        reasoning="scaled to zero replicas; " + " ".join(guidance),
                    )
                )
                if "mitigation" in task.kind:
                    ctx.phase = "mitigation"
                    command = f"scale deployment {name} -n {ns} --replicas=1"
                    self._tool(ctx, "kubectl", {"command": command}, events)
                    actions.append(f"kubectl {command}")
        events({"type": "agent_message", "content": f"{len(entities)} Deployment(s) at zero replicas"})
        return AgentOutput(
            diagnosis=Diagnosis(entities=entities), mitigation_actions=actions, steps=len(names) + 1
        )


def make_agent(config: AgentConfig) -> ReplicaRestorer:
    """Restores Deployments scaled to zero, guided by the runbook tool (example plug-in, no LLM)."""
    return ReplicaRestorer(config)
