"""The Agent protocol and what flows in and out of it.

An agent gets a :class:`Task` — the goal text, the environment's endpoints, a work folder and its
limits — and returns an :class:`AgentOutput`. It never sees the scenario file or the ground truth.
Mitigation happens on the cluster itself; the output only reports what the agent concluded.

The diagnosis follows ITBench-Lite's ``agent_output.json`` contract::

    {"entities": [{"name": "otel-demo/Service/ad", "contributing_factor": true,
                   "reasoning": "...", "evidence": "..."}],
     "propagations": [{"source": "...", "target": "...", "condition": "...", "effect": "..."}],
     "alerts_explained": [{"alert": "...", "explanation": "...", "explained": true}]}
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..twin.endpoints import Endpoints

TaskKind = Literal["diagnosis", "mitigation", "diagnosis+mitigation", "compliance", "anomaly"]


class Limits(BaseModel):
    """Limits the harness enforces on one episode."""

    max_steps: int = 50
    wall_time_s: float = 900.0
    max_tokens: int | None = None
    max_cost_usd: float | None = None


class Task(BaseModel):
    """What the agent is told. Nothing here reveals the scenario id, faults or ground truth."""

    model_config = ConfigDict(extra="forbid")

    goal: str
    kind: TaskKind = "diagnosis+mitigation"
    persona: Literal["sre", "ciso", "finops"] = "sre"
    endpoints: Endpoints
    workdir: str
    limits: Limits = Field(default_factory=Limits)
    namespaces: list[str] = Field(default_factory=list)
    """Namespaces the agent may act in (the app's); the kubectl tool's allow-list."""
    masked: list[str] = Field(default_factory=list)
    """Observability masked for this episode, e.g. ["traces"]."""
    on_twin: bool = True
    """True when the environment is the twin (the ``wait`` tool then fast-forwards the clock)."""


class DiagnosisEntity(BaseModel):
    name: str = Field(description='"namespace/Kind/name", e.g. "otel-demo/Deployment/ad"')
    key: str | None = Field(
        default=None,
        description="for configuration (a ConfigMap, a Secret): the key at fault, a data key or a flag "
        '("adFailure", or "demo.flagd.json#adFailure"); a flag fault is named by its flag or by the '
        "service whose feature it is, never by the flag file alone",
    )
    contributing_factor: bool = False
    reasoning: str = ""
    evidence: str = ""


class Propagation(BaseModel):
    source: str
    target: str
    condition: str = ""
    effect: str = ""


class AlertExplanation(BaseModel):
    alert: str
    explanation: str = ""
    explained: bool = False


class Diagnosis(BaseModel):
    """ITBench-Lite's agent_output.json contract."""

    entities: list[DiagnosisEntity] = Field(default_factory=list)
    propagations: list[Propagation] = Field(default_factory=list)
    alerts_explained: list[AlertExplanation] = Field(default_factory=list)


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0
    tool_calls: int = 0


class AgentOutput(BaseModel):
    diagnosis: Diagnosis | None = None
    """None when the agent produced no (valid) diagnosis."""
    diagnosis_error: str | None = None
    """Why the diagnosis is missing or was rejected (not JSON, not the schema...)."""
    mitigation_actions: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    steps: int = 0
    diagnosis_time_s: float | None = None
    """Seconds from task start to the diagnosis (for MTTD), as measured by the agent loop."""
    extra: dict[str, Any] = Field(default_factory=dict)


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


EventSink = Callable[[dict[str, Any]], None]
"""Where an agent reports trajectory events (model call, tool call, observation...). The harness
turns each dict into a typed trajectory event; see ``harness/trajectory.py``."""


@runtime_checkable
class Agent(Protocol):
    """Anything that can attempt a task."""

    name: str

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        """Attempt ``task``; report progress through ``events``; return the outcome.

        Raise nothing for ordinary failures (bad model output, tool errors): record them and
        return. Exceptions are recorded by the harness as ``agent_error``.
        """
        ...


def write_agent_output(workdir: str | Path, output: AgentOutput) -> Path:
    """Write ``agent_output.json`` (the diagnosis, ITBench-Lite shape) into the work folder."""
    p = Path(workdir) / "agent_output.json"
    diag = output.diagnosis.model_dump() if output.diagnosis else {}
    p.write_text(__import__("json").dumps(diag, indent=2) + "\n")
    return p
