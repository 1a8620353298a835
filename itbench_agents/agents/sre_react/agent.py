"""``SREReactAgent``: the Agent-protocol wrapper around the sre-react graph."""

from __future__ import annotations

from typing import Any

from ...core.agent import EventSink
from ...core.output import AgentOutput, Diagnosis, Usage
from ...core.task import Task
from ...llm.client import LLMClient
from ...tools.context import ToolContext
from ...tools.toolsets import parse_tools
from ..base import AgentConfig
from ..llm_agent import agent_llm, settings_for
from .context import Context
from .tools import build_services


def flag(value: Any) -> bool:
    """An agent option as a boolean: ``--agent-option text_tool_calls=true`` arrives as a string."""
    if isinstance(value, str):
        if value.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if value.strip().lower() in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"expected true or false, got {value!r}")
    return bool(value)


class SREReactAgent:
    name = "sre-react"
    prompts = "sre_react"
    """The ``prompts/`` folder of the graph's templates (``context.py``)."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.last_services: Any = None

    def tools(self) -> str:
        """The ``--tools`` selection the graph runs with."""
        return self.config.tools

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        from .graph import graph

        cfg = self.config
        opts = cfg.options
        llm = agent_llm(cfg, events)
        tool_ctx = ToolContext.for_task(
            task,
            max_observation_tokens=int(opts.get("max_observation_tokens", 2000)),
            nl2_retries=int(opts.get("nl2_retries", 2)),
            llm_summary=flag(opts.get("llm_summary", False)),
        )
        tool_llm: LLMClient | None = None
        tools = self.tools()
        if parse_tools(tools).mode == "nl2":
            tool_llm = LLMClient.create(
                settings_for(cfg, tools=True),
                role="tools",
                events=events,
                record_dir=cfg.record_dir,
                replay_dir=cfg.replay_dir,
            )
            tool_ctx.tool_model = tool_llm
        svc = build_services(llm=llm, tool_ctx=tool_ctx, tools=tools, events=events)
        self.last_services = svc
        max_steps = min(int(opts.get("max_steps", task.limits.max_steps)), task.limits.max_steps)
        context = Context(
            model=cfg.model or "",
            tool_model=cfg.tool_model,
            tools=tools,
            prompts=self.prompts,
            namespaces=list(task.namespaces),
            max_steps=max_steps,
            wall_time_s=task.limits.wall_time_s,
            max_format_errors=int(opts.get("max_format_errors", 3)),
            max_repairs=int(opts.get("max_repairs", 1)),
            max_reflections=int(opts.get("max_reflections", 2)),
            settle_s=int(opts.get("settle_s", 60)),
            text_tool_calls=flag(opts.get("text_tool_calls", False)),
            observe_first=flag(opts.get("observe_first", True)),
            services=svc,
        )
        final = graph.invoke(
            {"goal": task.goal, "kind": task.kind},
            context=context,
            config={"recursion_limit": max_steps * 4 + 40},
        )
        clients = [c for c in (llm, tool_llm) if c is not None]
        usage = Usage(
            input_tokens=sum(c.input_tokens for c in clients),
            output_tokens=sum(c.output_tokens for c in clients),
            cost_usd=sum(c.cost_usd for c in clients),
            model_calls=sum(c.calls for c in clients),
            tool_calls=len(svc.tool_overhead_s),
        )
        diag = final.get("diagnosis")
        return AgentOutput(
            diagnosis=Diagnosis.model_validate(diag) if diag else None,
            diagnosis_error=final.get("diagnosis_error")
            or (
                None if diag or "diagnosis" not in task.kind else f"no diagnosis ({final.get('termination')})"
            ),
            mitigation_actions=list(tool_ctx.actions),
            usage=usage,
            steps=int(final.get("steps", 0)),
            diagnosis_time_s=final.get("diagnosis_time_s"),
            extra={
                "termination": final.get("termination"),
                "format_errors": final.get("format_errors", 0),
                "repairs": final.get("repairs", 0),
                "reflections": final.get("reflections", 0),
                "alerts_cleared": final.get("alerts_cleared"),
                "tools": tools,
            },
        )
