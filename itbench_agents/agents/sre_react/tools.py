"""Tools wiring for sre-react: the per-episode services and the tool-execution step.

Tools are the shared ones from ``itbench_agents.tools`` (``--tools direct|nl2``, plus registered
tools by name: ``direct,+runbook``); during diagnosis
the kubectl policy refuses mutations, during mitigation it allows them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from ...core.agent import EventSink
from ...llm.client import LLMClient
from ...tools.adapters import to_langchain
from ...tools.context import ToolContext
from ...tools.registry import ToolSpec
from ...tools.toolsets import ToolSelection, parse_tools, toolset
from .context import Context


@dataclass
class Services:
    llm: LLMClient
    tool_ctx: ToolContext
    specs: dict[str, ToolSpec]
    events: EventSink
    t0: float = field(default_factory=time.perf_counter)
    tool_overhead_s: list[float] = field(default_factory=list)
    """Wall time of each tool call (benchmarks: harness + tool overhead per step)."""
    observation_tokens: list[int] = field(default_factory=list)

    def tool_schemas(self) -> list[Any]:
        """LangChain tools (for ``bind_tools``); execution goes through :func:`run_tool_calls`."""
        return to_langchain(self.specs.values(), self.tool_ctx)


def build_services(
    *,
    llm: LLMClient,
    tool_ctx: ToolContext,
    tools: str | ToolSelection,
    events: EventSink,
) -> Services:
    """``tools``: a ``--tools`` selection (``direct``, ``nl2``, ``direct,+runbook``...)."""
    specs = {s.name: s for s in toolset(tools, tool_ctx.masked)}
    return Services(llm=llm, tool_ctx=tool_ctx, specs=specs, events=events)


def services_from_context(ctx: Context) -> Services:
    """Studio path: build services from the context's plain fields."""
    from ...core.endpoints import Endpoints
    from ...llm.models import ModelSettings

    if not ctx.endpoints_file:
        raise ValueError(
            "set endpoints_file (or ITBENCH_ENDPOINTS) to an endpoints file from `itbench twin serve`"
        )
    if not ctx.model:
        raise ValueError("set model (or ITBENCH_MODEL), e.g. openai/gpt-4o or scripted:FILE")
    eps = Endpoints.read(ctx.endpoints_file)

    def sink(event: dict[str, Any]) -> None:
        pass

    settings = ModelSettings(model=ctx.model, base_url=ctx.base_url, api_key_env=ctx.api_key_env)
    llm = LLMClient.create(settings, role="agent", events=sink)
    tctx = ToolContext(endpoints=eps, namespaces=list(ctx.namespaces))
    if parse_tools(ctx.tools).mode == "nl2":
        tsettings = ModelSettings(
            model=ctx.tool_model or ctx.model, base_url=ctx.base_url, api_key_env=ctx.api_key_env
        )
        tctx.tool_model = LLMClient.create(tsettings, role="tools", events=sink)
    return build_services(llm=llm, tool_ctx=tctx, tools=ctx.tools, events=sink)


def run_tool_calls(svc: Services, msg: AIMessage, step: int) -> tuple[list[ToolMessage], int]:
    """Execute the message's tool calls; (tool messages, format errors: unknown tools, bad args)."""
    out: list[ToolMessage] = []
    bad = 0
    for call in msg.tool_calls:
        name, args, cid = call["name"], call.get("args") or {}, call.get("id") or ""
        svc.events({"type": "tool_call", "tool": name, "args": args, "step": step})
        spec = svc.specs.get(name)
        t0 = time.perf_counter()
        if spec is None:
            bad += 1
            text = f"Error: unknown tool {name!r}; available tools: {', '.join(svc.specs)}"
            error: str | None = text
            tokens = 0
        else:
            svc.tool_ctx.notes.clear()
            result = spec.invoke(svc.tool_ctx, args)
            text, error, tokens = result.output, (result.output if result.error else None), result.tokens
            if result.error and "invalid arguments" in result.output:
                bad += 1
        svc.tool_overhead_s.append(time.perf_counter() - t0)
        svc.observation_tokens.append(tokens)
        svc.events(
            {
                "type": "observation",
                "tool": name,
                "content": text,
                "error": error,
                "step": step,
                "tokens": tokens,
                **(
                    {"nl2_attempts": svc.tool_ctx.notes["nl2_attempts"]}
                    if "nl2_attempts" in svc.tool_ctx.notes
                    else {}
                ),
            }
        )
        out.append(
            ToolMessage(content=text, tool_call_id=cid, name=name, status="error" if error else "success")
        )
    for inv in msg.invalid_tool_calls:
        bad += 1
        text = f"Error: the call to {inv.get('name') or '(no name)'} has arguments that are not valid JSON: {str(inv.get('args'))[:200]}"
        svc.events(
            {
                "type": "observation",
                "tool": inv.get("name") or "",
                "content": text,
                "error": text,
                "step": step,
            }
        )
        out.append(
            ToolMessage(
                content=text, tool_call_id=inv.get("id") or "", name=inv.get("name") or "", status="error"
            )
        )
    return out, bad
