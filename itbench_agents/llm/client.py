"""One way to call a model: concurrency limit, retries, usage + cost events, record / replay.

Both the agent model and the NL2 tool model go through :class:`LLMClient`; the agents never call
LangChain chat models directly, so every call lands in the trajectory the same way.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ..core.agent import EventSink
from .exchange import ExchangeLog
from .models import ModelSettings, make_chat_model
from .record import Recorder, Replayer
from .retry import LLMAbort, call_with_retries, model_semaphore
from .usage import cost_usd, usage_of


class LLMClient:
    def __init__(
        self,
        settings: ModelSettings,
        chat_model: Any,
        *,
        role: str = "agent",
        events: EventSink | None = None,
        recorder: Recorder | None = None,
        replayer: Replayer | None = None,
    ) -> None:
        self.settings = settings
        self.chat_model = chat_model
        self.role = role
        self.events = events
        self.recorder = recorder
        self.replayer = replayer
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.calls = 0
        self.step = 0
        self._lock = threading.Lock()
        self._bound: dict[tuple[str, ...], Any] = {}
        self._exchanges = ExchangeLog()
        self.sleep = time.sleep
        """Backoff sleep (tests replace it to avoid real waiting)."""

    @classmethod
    def create(
        cls,
        settings: ModelSettings,
        *,
        role: str = "agent",
        events: EventSink | None = None,
        record_dir: str | None = None,
        replay_dir: str | None = None,
    ) -> LLMClient:
        replayer = Replayer(replay_dir, role) if replay_dir else None
        chat_model = None if replayer else make_chat_model(settings, role=role)
        recorder = Recorder(record_dir, role) if record_dir else None
        return cls(settings, chat_model, role=role, events=events, recorder=recorder, replayer=replayer)

    def _model_for(self, tools: list[Any] | None) -> Any:
        if not tools:
            return self.chat_model
        key = tuple(getattr(t, "name", str(t)) for t in tools)
        if key not in self._bound:
            self._bound[key] = self.chat_model.bind_tools(tools)
        return self._bound[key]

    def invoke(self, messages: list[BaseMessage], tools: list[Any] | None = None) -> AIMessage:
        """One model call. Raises :class:`LLMAbort` for errors that retrying cannot fix."""
        tool_names = [getattr(t, "name", str(t)) for t in tools or []]
        t0 = time.perf_counter()
        retries = 0
        matches = True
        if self.replayer is not None:
            try:
                msg, matches = self.replayer.next(messages, tool_names)
            except Exception as exc:
                raise LLMAbort("replay_exhausted", str(exc)) from exc
        else:
            model = self._model_for(tools)

            def once() -> Any:
                with model_semaphore(
                    self.settings.model, self.settings.base_url, self.settings.max_concurrency
                ):
                    return model.invoke(messages)

            def on_retry(n: int, decision: Any, exc: BaseException) -> None:
                self._emit(
                    {
                        "type": "note",
                        "raw": {"llm_retry": n, "reason": decision.reason, "error": str(exc)[:300]},
                    }
                )

            try:
                msg, retries = call_with_retries(
                    once, max_retries=self.settings.max_retries, on_retry=on_retry, sleep=self.sleep
                )
            except LLMAbort as exc:
                where = f" at {self.settings.base_url}" if self.settings.base_url else ""
                raise LLMAbort(exc.reason, f"model {self.settings.model!r}{where}: {exc.detail}") from exc
            if not isinstance(msg, AIMessage):
                msg = AIMessage(content=getattr(msg, "content", str(msg)))
        if self.recorder is not None:
            self.recorder.save(messages, tool_names, msg)
        tin, tout = usage_of(msg)
        cost = cost_usd(self.settings.model, tin, tout)
        with self._lock:  # one event at a time: a message's first carrier is the first event
            self.input_tokens += tin
            self.output_tokens += tout
            self.cost_usd += cost
            self.calls += 1
            self._emit(
                {
                    "type": "model_call",
                    "model": self.settings.model,
                    "role": self.role,
                    "input_tokens": tin,
                    "output_tokens": tout,
                    "cost_usd": cost,
                    "latency_s": round(time.perf_counter() - t0, 4),
                    "retries": retries,
                    # the whole prompt, each message and tool set once per client (llm/exchange.py)
                    "prompt": {
                        **self._exchanges.prompt(messages, tools),
                        "last": _text(messages[-1])[:1000] if messages else "",
                    },
                    "response": {
                        "content": _text(msg),
                        "tool_calls": [{"name": tc["name"], "args": tc["args"]} for tc in msg.tool_calls],
                        "invalid_tool_calls": len(msg.invalid_tool_calls),
                    },
                    **({"replay_mismatch": True} if not matches else {}),
                }
            )
        return msg

    def complete(self, system: str, messages: list[dict[str, str]]) -> str:
        """Plain-text chat (the NL2 tools' interface)."""
        lc: list[BaseMessage] = [SystemMessage(system)]
        for m in messages:
            lc.append(HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"]))
        return _text(self.invoke(lc))

    def _emit(self, event: dict[str, Any]) -> None:
        if self.events is not None:
            event.setdefault("step", self.step)
            self.events(event)


def _text(msg: BaseMessage) -> str:
    c = msg.content
    if isinstance(c, str):
        return c
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in c)
