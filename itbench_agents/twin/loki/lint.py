"""A LogQL check for the agents' NL2Logs tool (ITBench's ``logql_linter``): parse before running.

:func:`check_logql` returns ``None`` for a valid query or Loki's own error text plus a short hint
for the mistakes language models make most (PromQL metric names, missing ranges, ``{}``).
"""

from __future__ import annotations

import re

from .parser import LogQLParseError, parse_logql

_HINTS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"^\s*[A-Za-z_:][A-Za-z0-9_:]*\s*(\{|$)|[A-Za-z_:][A-Za-z0-9_:]*\{"),
        "LogQL queries start with a stream selector such as "
        '{namespace="otel-demo", app="cart"}; metric names are PromQL, not LogQL.',
    ),
    (re.compile(r"^\s*\{\s*\}"), "a stream selector needs at least one label matcher."),
    (
        re.compile(r"(count_over_time|rate|bytes_over_time|bytes_rate)\s*\([^\[]*\)\s*$"),
        'range aggregations need a range, e.g. count_over_time({app="cart"} |= "error" [5m]).',
    ),
]


def check_logql(query: str) -> str | None:
    """``None`` if ``query`` is valid LogQL, else the parse error (with a hint when one applies)."""
    if not query or not query.strip():
        return "empty LogQL query"
    try:
        parse_logql(query)
    except LogQLParseError as exc:
        msg = str(exc)
        for rx, hint in _HINTS:
            if rx.search(query):
                return f"{msg} (hint: {hint})"
        return msg
    return None
