"""Linters the NL2* tools run on a generated query before executing it (the paper's reflection).

Each returns a list of problems (empty = fine), phrased so the tool model can fix the query.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .context import ToolContext
from .kubectl import parse_command
from .kubectl_policy import check
from .spec import ToolError


def lint_kubectl(command: str, ctx: ToolContext) -> list[str]:
    try:
        argv = parse_command(command)
    except ToolError as exc:
        return [str(exc)]
    decision = check(argv, phase=ctx.phase, namespaces=ctx.namespaces, workdir=ctx.workdir)
    return [] if decision.allowed else [decision.reason]


def lint_promql(query: str) -> list[str]:
    import promql_parser

    if not query.strip():
        return ["empty query"]
    try:
        promql_parser.parse(query)
    except Exception as exc:
        return [f"PromQL parse error: {exc}"]
    return []


_SELECTOR = re.compile(r'^\{\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"')


def _basic_logql(query: str) -> list[str]:
    q = query.strip()
    if not q:
        return ["empty query"]
    problems = []
    for open_, close in ("{}", "()", "[]"):
        if q.count(open_) != q.count(close):
            problems.append(f"unbalanced {open_}{close}")
    if q.count('"') % 2:
        problems.append("unbalanced double quotes")
    inner = re.search(r"\{[^{}]*\}", q)
    if not inner:
        problems.append('a LogQL query needs a stream selector such as {service_name="cart"}')
    elif not _SELECTOR.match(inner.group(0)):
        problems.append('the stream selector needs at least one matcher like label="value"')
    return problems


def lint_logql(query: str) -> list[str]:
    """The twin's LogQL checker when it is installed, else a basic structural check."""
    try:
        from ..twin.loki.lint import check_logql  # type: ignore[import-not-found,unused-ignore]
    except Exception:
        return _basic_logql(query)
    try:
        res: Any = check_logql(query)
    except Exception as exc:
        return [str(exc)]
    if res is None or res is True:
        return []
    if isinstance(res, str):
        return [res] if res else []
    if isinstance(res, list | tuple):
        return [str(r) for r in res]
    return []


def lint_jaeger(request: str, ctx: ToolContext) -> tuple[dict[str, Any], list[str]]:
    """Parse the tool model's JSON search and check service / operation names against Jaeger."""
    from .traces import operations, services

    try:
        params = json.loads(request)
    except json.JSONDecodeError as exc:
        return {}, [f"not valid JSON: {exc}"]
    if not isinstance(params, dict):
        return {}, ["expected a JSON object"]
    allowed = {"service", "operation", "errors_only", "since", "limit"}
    problems = [
        f"unknown key {k!r} (allowed: {', '.join(sorted(allowed))})" for k in params if k not in allowed
    ]
    svc = params.get("service")
    known = services(ctx)
    if not svc:
        problems.append("missing 'service'")
    elif svc not in known:
        problems.append(f"unknown service {svc!r}; valid services: {', '.join(known)}")
    elif params.get("operation"):
        ops = operations(ctx, svc)
        if params["operation"] not in ops:
            problems.append(
                f"unknown operation {params['operation']!r} for {svc}; valid: {', '.join(ops[:30])}"
            )
    return params, problems
