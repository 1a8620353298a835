"""How an agent is built (:class:`AgentConfig`), beside the contracts every agent uses.

The contracts live in ``itbench_agents/core``: an agent gets a :class:`Task` and returns an
:class:`AgentOutput` (whose diagnosis follows ITBench-Lite's ``agent_output.json``), reporting
through an :class:`EventSink`. They are re-exported here so that an agent package needs one import.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..core.agent import Agent, EventSink, LimitExceeded
from ..core.output import (
    AgentOutput,
    AlertExplanation,
    Diagnosis,
    DiagnosisEntity,
    Propagation,
    Usage,
    write_agent_output,
)
from ..core.task import Limits, Task, TaskKind

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentOutput",
    "AlertExplanation",
    "Diagnosis",
    "DiagnosisEntity",
    "EventSink",
    "LimitExceeded",
    "Limits",
    "Propagation",
    "Task",
    "TaskKind",
    "Usage",
    "write_agent_output",
]


class AgentConfig(BaseModel):
    """How to build an agent: the CLI's ``--model``, ``--tool-model``, ``--base-url``... end up here.

    Every agent factory has the signature ``factory(config: AgentConfig) -> Agent``; the registry
    (``agents/registry.py``) maps names such as ``sre-react`` to factories.
    """

    model: str | None = None
    """litellm model string (``openai/gpt-4o``), ``scripted:FILE``, or None for non-LLM agents."""
    tool_model: str | None = None
    """Model for the NL2* tools (the paper's *_TOOLS); defaults to ``model``."""
    base_url: str | None = None
    api_key_env: str | None = None
    tools: str = "direct"
    """``direct`` or ``nl2`` (the paper's NL2* tools), then registered tools added or removed by
    name: ``direct,+runbook`` (``itbench_agents/tools/toolsets.py``)."""
    temperature: float = 0.0
    top_p: float = 1e-7
    seed: int = 42
    max_tokens: int | None = None
    record_dir: str | None = None
    replay_dir: str | None = None
    command: list[str] | None = None
    """For the ``command`` agent: the program to run."""
    sandbox: Literal["auto", "require", "bwrap", "none"] = "auto"
    """For the ``command`` agent: bubblewrap sandbox (``auto``: when available, with a warning
    where it is not; ``require`` or ``bwrap``: refuse to run without it)."""
    sandbox_bind: list[str] = Field(default_factory=list)
    """For the ``command`` agent: extra folders bound read-only into the sandbox."""
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tools")
    @classmethod
    def _tools_selection(cls, value: str) -> str:
        from ..tools.toolsets import parse_tools

        parse_tools(value)  # the syntax; tool names are checked by the agent's preflight
        return value
