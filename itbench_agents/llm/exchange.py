"""What a model saw and said, kept whole in the trajectory but each piece only once.

A ``model_call`` event's ``prompt`` lists its messages by digest (``ids``) and carries in ``new``
only the messages no earlier call of the same client carried, serialised with LangChain's
``message_to_dict`` (so :func:`prompts_of` can rebuild every call's full message list from the
trajectory, and ``messages_from_dict`` can replay it); the tool schemas offered (OpenAI function
format) are likewise named by digest (``tools``) and carried once (``tool_schemas``). An agent
loop re-sends its whole history at every step: stored like this, a trajectory grows with the
conversation, not with its square.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict


def _digest(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


def tool_schema(tool: Any) -> dict[str, Any]:
    if isinstance(tool, dict):
        return tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    try:
        return convert_to_openai_tool(tool)
    except Exception:  # noqa: BLE001 - an exotic tool object: its name at least
        return {"type": "function", "function": {"name": getattr(tool, "name", str(tool))}}


class ExchangeLog:
    """Per client: which messages and tool sets its events already carried."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def prompt(self, messages: Sequence[BaseMessage], tools: Iterable[Any] | None) -> dict[str, Any]:
        ids, new = [], {}
        for m in messages:
            doc = message_to_dict(m)
            key = _digest(doc)
            ids.append(key)
            if key not in self._seen:
                self._seen.add(key)
                new[key] = doc
        out: dict[str, Any] = {"messages": len(messages), "ids": ids, "new": new}
        schemas = [tool_schema(t) for t in tools or []]
        if schemas:
            key = _digest(schemas)
            out["tools"] = key
            if key not in self._seen:
                self._seen.add(key)
                out["tool_schemas"] = schemas
        return out


def prompts_of(events: Iterable[dict[str, Any]], role: str | None = None) -> list[dict[str, Any]]:
    """Every ``model_call`` of a trajectory (of one ``role``: ``agent``, ``tool``...) with its full
    prompt rebuilt: ``{"messages": [BaseMessage...], "tools": [schema...], "response": ...}``."""
    store: dict[str, Any] = {}
    out = []
    for ev in events:
        if ev.get("type") != "model_call" or (role is not None and ev.get("role") != role):
            continue
        prompt = ev.get("prompt") or {}
        store.update(prompt.get("new") or {})
        if prompt.get("tool_schemas") is not None:
            store[prompt["tools"]] = prompt["tool_schemas"]
        messages = messages_from_dict([store[k] for k in prompt.get("ids") or []])
        tools = store.get(prompt["tools"], []) if prompt.get("tools") else []
        out.append({"messages": messages, "tools": tools, "response": ev.get("response")})
    return out
