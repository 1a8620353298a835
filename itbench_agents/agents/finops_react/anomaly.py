"""finops-react on a cost anomaly: a LangGraph ReAct loop over the sandboxed ``analysis`` tool.

    start ─▶ analyze ⇄ tools      (pandas over data.csv, tools/analysis.py)
                │ text
                ▼
              answer ── not the answer's JSON ──▶ analyze   (a format error; at most max_format_errors)
                │ valid
                ▼
              finish                (the agent saves answer.json in its work folder)

Every model call is one step; the limits end the episode with a recorded ``termination``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.runtime import Runtime

from ...core.agent import EventSink
from ...core.output import AgentOutput, Usage
from ...core.task import Task
from ...llm.prompts import render
from ...llm.retry import LLMAbort
from ...tools.context import ToolContext
from ...tools.registry import get_tool
from ..base import AgentConfig
from ..llm_agent import agent_llm
from ..sre_react.tools import Services, run_tool_calls

ANSWER = "answer.json"
TYPES = ("CSP", "Cloud_Service", "Application", "Instance_Family")


@dataclass
class AnomalyState:
    goal: str = ""
    alert: str = ""
    columns: str = ""
    messages: Annotated[Sequence[AnyMessage], add_messages] = field(default_factory=list)
    steps: int = 0
    format_errors: int = 0
    answer: dict[str, Any] | None = None
    termination: str | None = None


@dataclass(kw_only=True)
class AnomalyContext:
    services: Services
    max_steps: int = 20
    max_format_errors: int = 3
    wall_time_s: float | None = None


class AnswerError(ValueError):
    pass


def parse_answer(text: str) -> dict[str, Any]:
    """The reply's ``{"resource": [{"name", "type"}]}`` (the first JSON object in it)."""
    start = text.find("{")
    end = text.rfind("}")
    if start < 0 or end < start:
        raise AnswerError("the reply holds no JSON object")
    try:
        obj = json.loads(text[start : end + 1])
    except json.JSONDecodeError as e:
        raise AnswerError(f"the reply's JSON does not parse: {e}") from None
    res = obj.get("resource") if isinstance(obj, dict) else None
    if not isinstance(res, list) or not res:
        raise AnswerError('the answer needs "resource": a non-empty list of {"name", "type"}')
    for r in res:
        if not isinstance(r, dict) or not isinstance(r.get("name"), str) or r.get("type") not in TYPES:
            raise AnswerError(f'each resource needs a "name" and a "type" among {", ".join(TYPES)}: {r!r}')
    return {"resource": [{"name": r["name"], "type": r["type"]} for r in res]}


def start(state: AnomalyState) -> dict[str, Any]:
    return {"messages": [HumanMessage("Begin the analysis.")]}


def analyze(state: AnomalyState, runtime: Runtime[AnomalyContext]) -> dict[str, Any]:
    ctx = runtime.context
    svc = ctx.services
    if state.steps >= ctx.max_steps:
        return {"termination": "max_steps"}
    if ctx.wall_time_s is not None and time.perf_counter() - svc.t0 > ctx.wall_time_s:
        return {"termination": "wall_time"}
    system = render("finops_react/anomaly.md.j2", goal=state.goal, alert=state.alert, columns=state.columns)
    svc.llm.step = state.steps + 1
    try:
        msg = svc.llm.invoke([SystemMessage(system), *state.messages], tools=svc.tool_schemas())
    except LLMAbort as exc:
        svc.events({"type": "error", "where": "model", "message": str(exc), "step": state.steps + 1})
        return {"termination": exc.reason, "steps": state.steps + 1}
    return {"messages": [msg], "steps": state.steps + 1}


def tools(state: AnomalyState, runtime: Runtime[AnomalyContext]) -> dict[str, Any]:
    last = state.messages[-1]
    assert isinstance(last, AIMessage)
    msgs, bad = run_tool_calls(runtime.context.services, last, state.steps)
    out: dict[str, Any] = {"messages": msgs, "format_errors": state.format_errors + bad}
    if state.format_errors + bad > runtime.context.max_format_errors:
        out["termination"] = "format_errors"
    return out


def answer(state: AnomalyState, runtime: Runtime[AnomalyContext]) -> dict[str, Any]:
    svc = runtime.context.services
    last = state.messages[-1]
    text = last.content if isinstance(last.content, str) else str(last.content)
    try:
        parsed = parse_answer(text)
    except AnswerError as exc:
        n = state.format_errors + 1
        svc.events({"type": "error", "where": "format", "message": str(exc), "step": state.steps})
        if n > runtime.context.max_format_errors:
            return {"format_errors": n, "termination": "format_errors"}
        reply = (
            f"Your reply is not the answer: {exc}. Analyse more with the tool, or reply with only the JSON."
        )
        return {"format_errors": n, "messages": [HumanMessage(reply)]}
    svc.events({"type": "agent_message", "content": {"answer": parsed}, "step": state.steps})
    return {"answer": parsed, "termination": "completed"}


def route_analyze(state: AnomalyState) -> str:
    if state.termination:
        return END
    last = state.messages[-1]
    calls = isinstance(last, AIMessage) and bool(last.tool_calls or last.invalid_tool_calls)
    return "tools" if calls else "answer"


def route_after(state: AnomalyState) -> str:
    return END if state.termination else "analyze"


def build_graph() -> Any:
    g = StateGraph(AnomalyState, context_schema=AnomalyContext)
    g.add_node("start", start)
    g.add_node("analyze", analyze)  # type: ignore[call-overload]
    g.add_node("tools", tools)  # type: ignore[call-overload]
    g.add_node("answer", answer)  # type: ignore[call-overload]
    g.add_edge(START, "start")
    g.add_edge("start", "analyze")
    g.add_conditional_edges("analyze", route_analyze, ["tools", "answer", END])
    g.add_conditional_edges("tools", route_after, ["analyze", END])
    g.add_conditional_edges("answer", route_after, ["analyze", END])
    return g.compile(name="finops-react-anomaly")


graph = build_graph()


def _columns(csv: Path) -> str:
    try:
        with csv.open() as fh:
            head = [next(fh).rstrip("\n") for _ in range(3)]
    except (OSError, StopIteration):
        return "(data.csv could not be read)"
    return "\n".join(head)


def run_anomaly(config: AgentConfig, task: Task, events: EventSink) -> AgentOutput:
    work = Path(task.workdir)
    llm = agent_llm(config, events)
    tool_ctx = ToolContext.for_task(
        task, max_observation_tokens=int(config.options.get("max_observation_tokens", 2000))
    )
    svc = Services(llm=llm, tool_ctx=tool_ctx, specs={"analysis": get_tool("analysis")}, events=events)
    try:
        alert = (work / "anomaly.json").read_text()[:2000]
    except OSError:
        alert = "(anomaly.json could not be read)"
    max_steps = min(int(config.options.get("max_steps", task.limits.max_steps)), task.limits.max_steps)
    context = AnomalyContext(
        services=svc,
        max_steps=max_steps,
        max_format_errors=int(config.options.get("max_format_errors", 3)),
        wall_time_s=task.limits.wall_time_s,
    )
    final = graph.invoke(
        {"goal": task.goal, "alert": alert, "columns": _columns(work / "data.csv")},
        context=context,
        config={"recursion_limit": max_steps * 3 + 20},
    )
    result = final.get("answer")
    if result is not None:
        (work / ANSWER).write_text(json.dumps(result, indent=2) + "\n")
    usage = Usage(
        input_tokens=llm.input_tokens,
        output_tokens=llm.output_tokens,
        cost_usd=llm.cost_usd,
        model_calls=llm.calls,
        tool_calls=len(svc.tool_overhead_s),
    )
    return AgentOutput(
        usage=usage,
        steps=int(final.get("steps", 0)),
        diagnosis_time_s=time.perf_counter() - svc.t0 if result is not None else None,
        extra={
            "termination": final.get("termination"),
            "format_errors": final.get("format_errors", 0),
            "answer": result,
            "tools": "analysis",
        },
    )
