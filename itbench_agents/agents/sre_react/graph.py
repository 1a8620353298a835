"""The sre-react LangGraph graph.

    start ─▶ diagnose ⇄ diag_tools          (read-only tools; kubectl refuses mutations)
                │ text
                ▼
             report ── invalid ──▶ diagnose  (before any observation, or not JSON → format error;
                │                             schema → repaired once, with a real entity as example)
                │ valid (and the task includes mitigation)
                ▼
          mitigate_start ─▶ mitigate ⇄ mit_tools ─▶ check_alerts ─▶ mitigate
                                │ text                (wait, re-read alerts, reflect if still firing)
                                ▼
                              finish

Every model call is one step; limits (steps, format errors, reflections) end the episode with a
recorded ``termination`` instead of an exception. ``graph`` is exported for LangGraph Studio.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ...llm.prompts import render
from ...llm.retry import LLMAbort
from ...llm.text_tool_calls import tool_calls_in_text
from .context import Context
from .diagnosis import DiagnosisParseError, parse_diagnosis
from .state import InputState, State
from .tools import Services, run_tool_calls, services_from_context


def _svc(runtime: Runtime[Context]) -> Services:
    ctx = runtime.context
    if ctx.services is None:
        ctx.services = services_from_context(ctx)
    svc: Services = ctx.services
    return svc


def _current_alerts(svc: Services) -> str:
    spec = svc.specs.get("alerts") or _builtin("alerts")
    return spec.invoke(svc.tool_ctx, {"state": "firing"}).output


def _builtin(name: str) -> Any:
    from ...tools.registry import get_tool

    return get_tool(name)


def _prompt(runtime: Runtime[Context], name: str, **variables: Any) -> str:
    """Render ``<context.prompts>/<name>``, or ``sre_react/<name>`` when that folder lacks it."""
    from ...paths import prompts_dir

    folder = runtime.context.prompts
    if not (prompts_dir() / folder / name).is_file():
        folder = "sre_react"
    return render(f"{folder}/{name}", **variables)


def _wants_diagnosis(kind: str) -> bool:
    return "diagnosis" in kind


def _wants_mitigation(kind: str) -> bool:
    return "mitigation" in kind


# ---------------------------------------------------------------------------- nodes
def start(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    svc = _svc(runtime)
    alerts = _current_alerts(svc)
    svc.events({"type": "agent_message", "content": f"initial alerts:\n{alerts}", "step": 0})
    out: dict[str, Any] = {"initial_alerts": alerts}
    if _wants_diagnosis(state.kind):
        out["diag_messages"] = [HumanMessage("Begin the diagnosis.")]
    return out


def _call(
    state: State,
    runtime: Runtime[Context],
    phase: Literal["diagnosis", "mitigation"],
    messages: list[BaseMessage],
) -> dict[str, Any]:
    svc = _svc(runtime)
    ctx = runtime.context
    key = "diag_messages" if phase == "diagnosis" else "mit_messages"
    if state.steps >= ctx.max_steps:
        return {"termination": "max_steps"}
    if ctx.wall_time_s is not None and time.perf_counter() - svc.t0 > ctx.wall_time_s:
        return {"termination": "wall_time"}
    svc.tool_ctx.phase = phase
    svc.llm.step = state.steps + 1
    try:
        msg = svc.llm.invoke(messages, tools=svc.tool_schemas())
    except LLMAbort as exc:
        svc.events({"type": "error", "where": "model", "message": str(exc), "step": state.steps + 1})
        return {"termination": exc.reason, "steps": state.steps + 1}
    if ctx.text_tool_calls:
        msg = _with_text_tool_calls(msg, svc, state.steps + 1)
    return {key: [msg], "steps": state.steps + 1}


def _with_text_tool_calls(msg: AIMessage, svc: Services, step: int) -> AIMessage:
    """``msg`` with the tool calls its text names (the opt-in fallback), recorded as a warning."""
    if msg.tool_calls or msg.invalid_tool_calls:
        return msg
    text = msg.content if isinstance(msg.content, str) else str(msg.content)
    calls = tool_calls_in_text(text, svc.specs.keys())
    if not calls:
        return msg
    names = ", ".join(c["name"] for c in calls)
    svc.events(
        {
            "type": "warning",
            "where": "text_tool_call",
            "message": f"read {len(calls)} tool call(s) from the reply's text ({names}): the server returned none",
            "step": step,
        }
    )
    return msg.model_copy(update={"tool_calls": calls})


def diagnose(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    system = _prompt(
        runtime,
        "diagnosis.md.j2",
        goal=state.goal,
        namespaces=_svc(runtime).tool_ctx.namespaces,
        alerts=state.initial_alerts,
    )
    return _call(state, runtime, "diagnosis", [SystemMessage(system), *state.diag_messages])


def _tools_step(state: State, runtime: Runtime[Context], key: str) -> dict[str, Any]:
    svc = _svc(runtime)
    msgs = list(getattr(state, key))
    last = msgs[-1]
    assert isinstance(last, AIMessage)
    tool_msgs, bad = run_tool_calls(svc, last, state.steps)
    out: dict[str, Any] = {key: tool_msgs, "format_errors": state.format_errors + bad}
    if state.format_errors + bad > runtime.context.max_format_errors:
        out["termination"] = "format_errors"
    return out


def diag_tools(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    return _tools_step(state, runtime, "diag_messages")


def _observed(messages: Sequence[BaseMessage]) -> bool:
    """Whether a tool call of this conversation has returned something (an error counts: it is
    an observation too)."""
    return any(isinstance(m, ToolMessage) for m in messages)


def _example_entity(svc: Services, wrong: str) -> str:
    """A real ``namespace/Kind/name`` from the cluster for the repair prompt: the Deployment the
    wrong name mentions, else the first one; a placeholder when the cluster cannot be read."""
    from ...tools.kubectl import kubectl_json

    for ns in svc.tool_ctx.namespaces:
        try:
            items = kubectl_json(svc.tool_ctx, f"get deployments -n {ns}").get("items") or []
        except Exception:  # noqa: BLE001 - only an example: any failure falls back to a placeholder
            continue
        names = [str((i.get("metadata") or {}).get("name")) for i in items if isinstance(i, dict)]
        if names:
            hit = next((n for n in names if n in wrong), names[0])
            return f"{ns}/Deployment/{hit}"
    return "<namespace>/Deployment/<name>"


def report(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    svc = _svc(runtime)
    ctx = runtime.context
    last = state.diag_messages[-1]
    text = last.content if isinstance(last.content, str) else str(last.content)
    if ctx.observe_first and not _observed(state.diag_messages):
        n = state.format_errors + 1
        why = "a diagnosis before any observation: call a tool first"
        svc.events({"type": "error", "where": "premature_diagnosis", "message": why, "step": state.steps})
        if n > ctx.max_format_errors:
            return {"format_errors": n, "termination": "format_errors", "diagnosis_error": why}
        return {"format_errors": n, "diag_messages": [HumanMessage(_prompt(runtime, "observe_first.md.j2"))]}
    try:
        diag = parse_diagnosis(text)
    except DiagnosisParseError as exc:
        if exc.not_json or not text.strip():
            n = state.format_errors + 1
            svc.events({"type": "error", "where": "format", "message": str(exc), "step": state.steps})
            if n > ctx.max_format_errors:
                return {"format_errors": n, "termination": "format_errors", "diagnosis_error": str(exc)}
            reply = _prompt(runtime, "format_error.md.j2", error=str(exc), phase="diagnosis")
            return {"format_errors": n, "diag_messages": [HumanMessage(reply)]}
        if state.repairs < ctx.max_repairs:
            svc.events(
                {"type": "error", "where": "diagnosis_schema", "message": str(exc), "step": state.steps}
            )
            example = _example_entity(svc, text)
            return {
                "repairs": state.repairs + 1,
                "diag_messages": [
                    HumanMessage(_prompt(runtime, "repair.md.j2", error=str(exc), example=example))
                ],
            }
        return {"diagnosis_error": str(exc)}
    svc.events({"type": "agent_message", "content": {"diagnosis": diag.model_dump()}, "step": state.steps})
    return {
        "diagnosis": diag.model_dump(),
        "diagnosis_step": state.steps,
        "diagnosis_time_s": time.perf_counter() - svc.t0,
    }


def mitigate_start(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    svc = _svc(runtime)
    svc.tool_ctx.phase = "mitigation"
    alerts = _current_alerts(svc)
    return {"initial_alerts": alerts, "mit_messages": [HumanMessage("Begin the mitigation.")]}


def mitigate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    diagnosis = json.dumps(state.diagnosis, indent=1) if state.diagnosis else ""
    system = _prompt(
        runtime,
        "mitigation.md.j2",
        goal=state.goal,
        namespaces=_svc(runtime).tool_ctx.namespaces,
        diagnosis=diagnosis,
        alerts=state.initial_alerts,
    )
    return _call(state, runtime, "mitigation", [SystemMessage(system), *state.mit_messages])


def mit_tools(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    return _tools_step(state, runtime, "mit_messages")


def check_alerts(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    svc = _svc(runtime)
    ctx = runtime.context
    waited = ctx.settle_s
    wait_res = _builtin("wait").invoke(svc.tool_ctx, {"seconds": waited})
    alerts = _current_alerts(svc)
    firing = alerts.strip() != "no alerts" and not alerts.startswith("Error")
    svc.events(
        {
            "type": "agent_message",
            "content": f"alert check after action ({wait_res.output}):\n{alerts}",
            "step": state.steps,
        }
    )
    out: dict[str, Any] = {"actions_seen": len(svc.tool_ctx.actions), "alerts_cleared": not firing}
    if not firing:
        out["mit_messages"] = [HumanMessage(_prompt(runtime, "alerts_cleared.md.j2", waited=waited))]
    elif state.reflections < ctx.max_reflections:
        out["reflections"] = state.reflections + 1
        out["mit_messages"] = [
            HumanMessage(_prompt(runtime, "reflect_alerts.md.j2", waited=waited, alerts=alerts))
        ]
    else:
        out["termination"] = "reflections_exhausted"
    return out


def mit_text(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """A text reply in mitigation: the summary (done) — or an empty reply (a format error)."""
    last = state.mit_messages[-1]
    text = last.content if isinstance(last.content, str) else str(last.content)
    if text.strip():
        return {"termination": "completed"}
    n = state.format_errors + 1
    if n > runtime.context.max_format_errors:
        return {"format_errors": n, "termination": "format_errors"}
    reply = _prompt(runtime, "format_error.md.j2", error="the reply was empty", phase="mitigation")
    return {"format_errors": n, "mit_messages": [HumanMessage(reply)]}


def finish(state: State) -> dict[str, Any]:
    return {"termination": state.termination or "completed"}


# ---------------------------------------------------------------------------- routing
def _has_calls(msg: Any) -> bool:
    return isinstance(msg, AIMessage) and bool(msg.tool_calls or msg.invalid_tool_calls)


def route_start(state: State) -> str:
    return "diagnose" if _wants_diagnosis(state.kind) else "mitigate_start"


def route_diagnose(state: State) -> str:
    if state.termination:
        return "finish"
    return "diag_tools" if _has_calls(state.diag_messages[-1]) else "report"


def route_diag_tools(state: State) -> str:
    return "finish" if state.termination else "diagnose"


def route_report(state: State) -> str:
    if state.termination:
        return "finish"
    if state.diagnosis is None and state.diagnosis_error is None:
        return "diagnose"
    return "mitigate_start" if _wants_mitigation(state.kind) else "finish"


def route_mitigate(state: State) -> str:
    if state.termination:
        return "finish"
    return "mit_tools" if _has_calls(state.mit_messages[-1]) else "mit_text"


def route_mit_tools(state: State, runtime: Runtime[Context]) -> str:
    if state.termination:
        return "finish"
    svc = _svc(runtime)
    return "check_alerts" if len(svc.tool_ctx.actions) > state.actions_seen else "mitigate"


def route_after(state: State) -> str:
    return "finish" if state.termination else "mitigate"


def build_graph() -> Any:
    g = StateGraph(State, input_schema=InputState, context_schema=Context)
    for name, fn in [
        ("start", start),
        ("diagnose", diagnose),
        ("diag_tools", diag_tools),
        ("report", report),
        ("mitigate_start", mitigate_start),
        ("mitigate", mitigate),
        ("mit_tools", mit_tools),
        ("check_alerts", check_alerts),
        ("mit_text", mit_text),
        ("finish", finish),
    ]:
        g.add_node(name, fn)  # type: ignore[call-overload,arg-type]
    g.add_edge(START, "start")
    g.add_conditional_edges("start", route_start, ["diagnose", "mitigate_start"])
    g.add_conditional_edges("diagnose", route_diagnose, ["diag_tools", "report", "finish"])
    g.add_conditional_edges("diag_tools", route_diag_tools, ["diagnose", "finish"])
    g.add_conditional_edges("report", route_report, ["diagnose", "mitigate_start", "finish"])
    g.add_edge("mitigate_start", "mitigate")
    g.add_conditional_edges("mitigate", route_mitigate, ["mit_tools", "mit_text", "finish"])
    g.add_conditional_edges("mit_tools", route_mit_tools, ["check_alerts", "mitigate", "finish"])
    g.add_conditional_edges("check_alerts", route_after, ["mitigate", "finish"])
    g.add_conditional_edges("mit_text", route_after, ["mitigate", "finish"])
    g.add_edge("finish", END)
    return g.compile(name="sre-react")


graph = build_graph()
