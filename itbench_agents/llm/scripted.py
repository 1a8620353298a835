"""``scripted:FILE``: a LangChain chat model that plays a YAML list of assistant turns.

    - content: "Let me look at the alerts first."
      tool_calls:
        - {name: alerts, args: {}}
    - content: '{"entities": [{"name": "otel-demo/Deployment/cart", "contributing_factor": true}]}'

A mapping ``{agent: [...], tools: [...]}`` gives each role (agent model, NL2 tool model) its own
turns. ``invalid_tool_calls: [{name, args: "<raw text>"}]`` plays a malformed tool call. When the
script runs out the model answers ``(script exhausted)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptedInvalidCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    args: str = ""


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    invalid_tool_calls: list[ScriptedInvalidCall] = Field(default_factory=list)


def load_script(path: Path, role: str = "agent") -> list[ScriptedTurn]:
    """Read and validate a script; errors name the file and the bad field."""
    from .errors import ModelConfigError

    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ModelConfigError(f"scripted model file {path} does not exist") from None
    except yaml.YAMLError as exc:
        raise ModelConfigError(f"{path}: not valid YAML: {exc}") from None
    if isinstance(data, dict):
        if role not in data:
            raise ModelConfigError(f"{path}: no turns for role {role!r} (keys: {', '.join(map(str, data))})")
        data = data[role]
    if not isinstance(data, list):
        raise ModelConfigError(f"{path}: expected a list of turns (or a mapping of role → list)")
    turns = []
    for i, item in enumerate(data):
        if isinstance(item, str):
            item = {"content": item}
        try:
            turns.append(ScriptedTurn.model_validate(item))
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ModelConfigError(f"{path}: turn {i}: {detail}") from None
    return turns


class ScriptedChatModel(BaseChatModel):
    """Plays scripted assistant turns in order; ``bind_tools`` returns the model itself."""

    turns: list[ScriptedTurn]
    source: str = "scripted"
    _pos: int = PrivateAttr(default=0)

    @classmethod
    def from_file(cls, path: Path, role: str = "agent") -> ScriptedChatModel:
        return cls(turns=load_script(path, role), source=f"scripted:{path}")

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def position(self) -> int:
        return self._pos

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        from .tokens import count_tokens

        if self._pos < len(self.turns):
            turn = self.turns[self._pos]
        else:
            turn = ScriptedTurn(content="(script exhausted)")
        n = self._pos
        self._pos += 1
        prompt_tokens = sum(
            count_tokens(m.text if isinstance(m.text, str) else str(m.content)) for m in messages
        )
        out_text = turn.content + "".join(json.dumps(tc.args) for tc in turn.tool_calls)
        msg = AIMessage(
            content=turn.content,
            tool_calls=[
                {"name": tc.name, "args": tc.args, "id": tc.id or f"call_{n}_{i}", "type": "tool_call"}
                for i, tc in enumerate(turn.tool_calls)
            ],
            invalid_tool_calls=[
                {
                    "name": c.name,
                    "args": c.args,
                    "id": f"bad_{n}_{i}",
                    "error": "not valid JSON",
                    "type": "invalid_tool_call",
                }
                for i, c in enumerate(turn.invalid_tool_calls)
            ],
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": count_tokens(out_text),
                "total_tokens": prompt_tokens + count_tokens(out_text),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])
