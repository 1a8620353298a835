"""Tool calls a model wrote as text: the opt-in fallback for servers that do not parse them.

Small local models served by llama.cpp's ``llama-server``, Ollama or vLLM without a tool-call parser
often answer with the call as JSON in the message text — in a code fence, in Qwen-style
``<tool_call>`` tags or bare — instead of in ``tool_calls``. :func:`tool_calls_in_text` finds such
calls, but only calls naming one of the tools that were offered, so a diagnosis or any other JSON
object is never mistaken for one. The shapes read: ``{"name", "arguments" | "args" | "parameters" |
"input"}``, ``{"function": {"name", "arguments"}}``, ``{"tool": ..., ...}``, ``{"tool_calls": [...]}``
and lists of them; arguments may be a JSON string. The agent records every use in its trajectory.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

MAX_TEXT = 100_000
"""The most characters of a reply searched for calls."""
ARG_KEYS = ("arguments", "args", "parameters", "input")


def _json_values(text: str) -> list[Any]:
    """Every JSON object or array that starts in ``text`` and is not inside an earlier one."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    i, n = 0, min(len(text), MAX_TEXT)
    while i < n:
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                i += 1
                continue
            out.append(value)
            i = end
        else:
            i += 1
    return out


def _one_call(obj: Any, offered: Collection[str]) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name", obj.get("tool"))
    if not isinstance(name, str) or name not in offered:
        return None
    args: Any = next((obj[k] for k in ARG_KEYS if k in obj), {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return {"name": name, "args": args}


def _calls(value: Any, offered: Collection[str]) -> list[dict[str, Any]]:
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    calls = [_one_call(v, offered) for v in items]
    return [c for c in calls if c is not None]


def tool_calls_in_text(text: str, offered: Collection[str]) -> list[dict[str, Any]]:
    """The calls of offered tools written in ``text``, as LangChain tool calls (``name``, ``args``,
    ``id``, ``type``); empty when there is none."""
    found: list[dict[str, Any]] = []
    for value in _json_values(text):
        found.extend(_calls(value, offered))
    return [{**c, "id": f"text_call_{i}", "type": "tool_call"} for i, c in enumerate(found)]
