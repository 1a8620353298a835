"""Model strings and LangChain chat models.

One canonical model string: litellm's ``provider/model`` (``openai/gpt-4o``, ``anthropic/...``,
``watsonx/...``, ``ollama/...``, ``hosted_vllm/...``), or ``scripted:FILE`` for tests and demos.
``base_url`` + ``api_key_env`` point any OpenAI-compatible server at the same code.

- ``openai/*`` and anything with a ``base_url`` → ``langchain_openai.ChatOpenAI``
- every other provider → ``langchain_litellm.ChatLiteLLM``
- ``scripted:FILE`` → :class:`~.scripted.ScriptedChatModel`

(LangChain's own spelling is ``provider:model``; we keep litellm's so one string works in both.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .errors import ModelConfigError as ModelConfigError

Backend = Literal["scripted", "openai", "litellm"]


@dataclass(frozen=True)
class ModelSettings:
    """How to reach one model, with the paper's sampling defaults (Table 15)."""

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    top_p: float = 1e-7
    seed: int = 42
    max_tokens: int | None = None
    timeout_s: float = 120.0
    max_retries: int = 4
    max_concurrency: int = 4

    @property
    def provider(self) -> str:
        return parse_model(self.model)[0]

    @property
    def name(self) -> str:
        return parse_model(self.model)[1]

    @property
    def backend(self) -> Backend:
        provider = self.provider
        if provider == "scripted":
            return "scripted"
        if provider == "openai" or self.base_url:
            return "openai"
        return "litellm"


def parse_model(model: str) -> tuple[str, str]:
    """``"openai/gpt-4o"`` → ``("openai", "gpt-4o")``; ``"scripted:f.yaml"`` → ``("scripted", "f.yaml")``."""
    m = (model or "").strip()
    if m.startswith("scripted:"):
        path = m[len("scripted:") :]
        if not path:
            raise ModelConfigError("scripted model needs a file: scripted:PATH.yaml")
        return "scripted", path
    if "/" not in m:
        raise ModelConfigError(
            f"model {model!r} is not a litellm model string; use provider/model, e.g. openai/gpt-4o, "
            "anthropic/claude-3-5-sonnet-20240620, ollama/llama3.1, or scripted:FILE"
        )
    provider, name = m.split("/", 1)
    if not provider or not name:
        raise ModelConfigError(f"model {model!r}: provider and model name must both be given")
    return provider, name


def api_key(settings: ModelSettings) -> str | None:
    if settings.api_key_env:
        return os.environ.get(settings.api_key_env)
    if settings.provider == "openai" and not settings.base_url:
        return os.environ.get("OPENAI_API_KEY")
    return None


def _chat_litellm() -> Any:
    """``ChatLiteLLM``, litellm imported with its packaged price map (no fetch at import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from langchain_litellm import ChatLiteLLM

    return ChatLiteLLM


def import_chat_library(settings: ModelSettings) -> None:
    """Import the library :func:`make_chat_model` uses for ``settings``, making no model: a process
    that then forks one child per episode (``harness/shared.py``) imports it once (litellm alone
    takes seconds)."""
    if settings.backend == "openai":
        import langchain_openai  # noqa: F401
    elif settings.backend == "litellm":
        _chat_litellm()


def make_chat_model(settings: ModelSettings, role: str = "agent") -> Any:
    """A LangChain chat model for ``settings`` (no network until it is called)."""
    backend = settings.backend
    if backend == "scripted":
        from .scripted import ScriptedChatModel

        return ScriptedChatModel.from_file(Path(settings.name), role=role)
    if backend == "openai":
        from langchain_openai import ChatOpenAI

        kwargs: dict[str, Any] = {
            "model": settings.name,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "seed": settings.seed,
            "max_retries": 0,  # our client retries with backoff (llm/retry.py)
            "timeout": settings.timeout_s,
            "api_key": api_key(settings) or "not-needed",
        }
        if settings.base_url:
            kwargs["base_url"] = settings.base_url
        if settings.max_tokens:
            kwargs["max_tokens"] = settings.max_tokens
        return ChatOpenAI(**kwargs)
    ChatLiteLLM = _chat_litellm()  # noqa: N806 - a class
    lkwargs: dict[str, Any] = {
        "model": settings.model,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "model_kwargs": {"seed": settings.seed},
        "max_retries": 0,
        "request_timeout": settings.timeout_s,
    }
    key = api_key(settings)
    if key:
        lkwargs["api_key"] = key
    if settings.max_tokens:
        lkwargs["max_tokens"] = settings.max_tokens
    return ChatLiteLLM(**lkwargs)
