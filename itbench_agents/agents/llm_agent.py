"""What the LLM agents (sre-react, ciso-react) share: their model settings from an ``AgentConfig``
and the agent-role client that records every call as a trajectory event."""

from __future__ import annotations

from ..core.agent import EventSink
from ..llm.client import LLMClient
from ..llm.models import ModelConfigError, ModelSettings, import_chat_library
from .base import AgentConfig


def settings_for(config: AgentConfig, tools: bool = False) -> ModelSettings:
    model = (config.tool_model or config.model) if tools else config.model
    if not model:
        raise ModelConfigError("this agent needs --model (a litellm provider/model string or scripted:FILE)")
    return ModelSettings(
        model=model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        temperature=config.temperature,
        top_p=config.top_p,
        seed=config.seed,
        max_tokens=config.max_tokens,
        max_concurrency=int(config.options.get("max_concurrency", 4)),
        max_retries=int(config.options.get("max_retries", 4)),
    )


def warm_model_libraries(config: AgentConfig) -> None:
    """Import the chat libraries of the agent's model and its tool model (``registry.warm``)."""
    for tools in (False, True):
        import_chat_library(settings_for(config, tools=tools))


def agent_llm(config: AgentConfig, events: EventSink) -> LLMClient:
    """The agent model's client (recording to / replaying from the config's folders)."""
    return LLMClient.create(
        settings_for(config),
        role="agent",
        events=events,
        record_dir=config.record_dir,
        replay_dir=config.replay_dir,
    )
