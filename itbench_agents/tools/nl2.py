"""The paper's NL2* tools: a tool model turns a natural-language request into a query, a linter
checks it, it runs, errors are reflected back to the tool model (bounded), and the result is
digested deterministically (series digest, log templates, trace error trees) before it returns.

    request ──tool model──▶ query ──lint──▶ execute ──▶ digest ──▶ observation
                  ▲            │ problems       │ error
                  └────────────┴────────────────┘  (at most ``ctx.nl2_retries`` times)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..llm.prompts import render
from .alerts import fetch_alerts, format_alerts
from .context import ToolContext
from .kubectl import kubectl as kubectl_tool
from .lint import lint_jaeger, lint_kubectl, lint_logql, lint_promql
from .logql import run_logql
from .promql import run_query
from .spec import ToolError, tool
from .traces import find_traces, services, summarize_traces


@dataclass(frozen=True)
class Translation:
    """One NL2 target: prompt template, linter and executor."""

    target: str
    prompt: str
    lint: Callable[[str, ToolContext], list[str]]
    execute: Callable[[str, ToolContext], str]


_FENCE = re.compile(r"```(?:[a-zA-Z0-9_-]*)\n?(.*?)```", re.S)


def extract_query(reply: str) -> str:
    """The query inside the tool model's reply (a fenced block, or the whole reply)."""
    m = _FENCE.search(reply)
    text = m.group(1) if m else reply
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines).strip() if len(lines) != 1 else lines[0].strip()


def translate_and_run(ctx: ToolContext, request: str, tr: Translation, **prompt_vars: object) -> str:
    if ctx.tool_model is None:
        raise ToolError("this NL2 tool needs a tool model (--tool-model), and none is configured")
    system = render(tr.prompt, namespaces=ctx.namespaces, phase=ctx.phase, **prompt_vars)
    messages = [{"role": "user", "content": request}]
    attempts: list[dict[str, str]] = []
    feedback = ""
    for _ in range(ctx.nl2_retries + 1):
        reply = ctx.tool_model.complete(system, messages)
        query = extract_query(reply)
        problems = tr.lint(query, ctx)
        if problems:
            feedback = "The query is invalid: " + "; ".join(problems)
        else:
            try:
                out = tr.execute(query, ctx)
                attempts.append({"query": query, "status": "ok"})
                ctx.notes["nl2_attempts"] = attempts
                return f"{tr.target} query: {query}\n{summarize_long(ctx, tr, request, out)}"
            except ToolError as exc:
                feedback = f"Running it failed: {exc}"
        attempts.append({"query": query, "status": feedback})
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": f"{feedback}\nReply with a corrected query only."},
        ]
    ctx.notes["nl2_attempts"] = attempts
    raise ToolError(
        f"no working {tr.target} query after {len(attempts)} attempt(s); last query: "
        f"{attempts[-1]['query']!r}; {feedback}"
    )


def summarize_long(ctx: ToolContext, tr: Translation, request: str, out: str) -> str:
    """The optional LLM summary: only when enabled and the digest is still long."""
    from ..llm.tokens import count_tokens

    if not ctx.llm_summary or ctx.tool_model is None:
        return out
    tokens = count_tokens(out)
    if tokens <= ctx.llm_summary_over_tokens:
        return out
    system = render("tools/summarize.md.j2", target=tr.target, request=request, max_words=200)
    summary = ctx.tool_model.complete(system, [{"role": "user", "content": out}]).strip()
    if not summary:
        return out
    ctx.notes["nl2_summarized_tokens"] = tokens
    return f"summary of {tokens} tokens of output:\n{summary}"


def _exec_kubectl(q: str, ctx: ToolContext) -> str:
    return kubectl_tool(ctx, q)


def _exec_jaeger(q: str, ctx: ToolContext) -> str:
    p = json.loads(q)
    return summarize_traces(
        find_traces(
            ctx,
            p["service"],
            p.get("operation"),
            bool(p.get("errors_only")),
            p.get("since", "15m"),
            int(p.get("limit", 20)),
        )
    )


def _lint_jaeger(q: str, ctx: ToolContext) -> list[str]:
    return lint_jaeger(q, ctx)[1]


def _lint_alert_filter(q: str, ctx: ToolContext) -> list[str]:
    try:
        f = json.loads(q)
    except json.JSONDecodeError as exc:
        return [f"not valid JSON: {exc}"]
    if not isinstance(f, dict):
        return ["expected a JSON object"]
    problems = [f"unknown key {k!r}" for k in f if k not in {"state", "alertname", "label"}]
    if f.get("state", "firing") not in {"firing", "pending", "all"}:
        problems.append('state must be "firing", "pending" or "all"')
    if f.get("alertname"):
        try:
            re.compile(str(f["alertname"]))
        except re.error as exc:
            problems.append(f"alertname is not a valid regex: {exc}")
    return problems


def _exec_alerts(q: str, ctx: ToolContext) -> str:
    f = json.loads(q)
    state = f.get("state", "firing")
    got = [a for a in fetch_alerts(ctx) if state == "all" or a.get("state") == state]
    if f.get("alertname"):
        rx = re.compile(str(f["alertname"]))
        got = [a for a in got if rx.search(a.get("labels", {}).get("alertname", ""))]
    for k, v in (f.get("label") or {}).items():
        got = [a for a in got if a.get("labels", {}).get(k) == v]
    return format_alerts(got)


KUBECTL = Translation("kubectl", "tools/nl2kubectl.md.j2", lint_kubectl, _exec_kubectl)
METRICS = Translation(
    "PromQL",
    "tools/nl2metrics.md.j2",
    lambda q, _c: lint_promql(q),
    lambda q, c: run_query(c, q, "15m", None),
)
LOGS = Translation("LogQL", "tools/nl2logs.md.j2", lambda q, _c: lint_logql(q), lambda q, c: run_logql(c, q))
TRACES = Translation("Jaeger", "tools/nl2traces.md.j2", _lint_jaeger, _exec_jaeger)
ALERTS = Translation("alert filter", "tools/nl2alerts.md.j2", _lint_alert_filter, _exec_alerts)


@tool(kind="mutate", name="nl2kubectl")
def nl2kubectl(ctx: ToolContext, request: str) -> str:
    """Ask about (or, during mitigation, change) the cluster in plain English; a tool model turns
    the request into one kubectl command, checks it, runs it and returns the output.

    Args:
        request: One question or action about one entity, e.g. "list pods in otel-demo that are not Running".
    """
    return translate_and_run(ctx, request, KUBECTL)


@tool(kind="read", name="nl2metrics")
def nl2metrics(ctx: ToolContext, request: str) -> str:
    """Ask about metrics in plain English; a tool model writes PromQL, it is parsed and run over
    the last 15 minutes, and each series comes back as min / max / last / trend.

    Args:
        request: e.g. "error rate per service over the last 15 minutes".
    """
    return translate_and_run(ctx, request, METRICS)


@tool(kind="read", name="nl2logs")
def nl2logs(ctx: ToolContext, request: str) -> str:
    """Ask about logs in plain English; a tool model writes LogQL, it is checked and run, and
    lines come back grouped by template.

    Args:
        request: e.g. "errors logged by the checkout service".
    """
    return translate_and_run(ctx, request, LOGS)


@tool(kind="read", name="nl2traces")
def nl2traces(ctx: ToolContext, request: str) -> str:
    """Ask about traces in plain English; a tool model picks the Jaeger search (service and
    operation names are checked against Jaeger) and error trees come back.

    Args:
        request: e.g. "failed requests through the frontend".
    """
    try:
        known = services(ctx)
    except ToolError:
        known = []
    return translate_and_run(ctx, request, TRACES, services=known)


@tool(kind="read", name="nl2alerts")
def nl2alerts(ctx: ToolContext, request: str) -> str:
    """Ask about alerts in plain English, e.g. "which alerts are firing for checkout?".

    Args:
        request: The question about alerts.
    """
    return translate_and_run(ctx, request, ALERTS)
