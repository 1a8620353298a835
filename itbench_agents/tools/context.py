"""What a tool call may use: endpoints, the phase, the namespace allow-list, the tool model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..core.endpoints import Endpoints

if TYPE_CHECKING:
    from ..core.task import Task

Phase = Literal["diagnosis", "mitigation"]


class TextModel(Protocol):
    """The tool model the NL2* tools talk to (``llm.client.LLMClient`` implements it)."""

    def complete(self, system: str, messages: list[dict[str, str]]) -> str:
        """Answer a chat (``[{"role": "user"|"assistant", "content": ...}]``) with plain text."""
        ...


@dataclass
class ToolContext:
    """Per-episode state shared by the tools. Nothing here reveals the scenario or ground truth."""

    endpoints: Endpoints
    namespaces: list[str] = field(default_factory=list)
    """Namespaces the kubectl tool may touch; empty = no restriction."""
    phase: Phase = "diagnosis"
    """During diagnosis the kubectl tool refuses mutating verbs."""
    on_twin: bool = True
    workdir: str | None = None
    masked: set[str] = field(default_factory=set)
    tool_model: TextModel | None = None
    """Model behind the NL2* tools; None → they refuse with a clear observation."""
    max_observation_tokens: int = 2000
    nl2_retries: int = 2
    """How many times an NL2* tool reflects an error back to the tool model."""
    llm_summary: bool = False
    """NL2* tools: after the deterministic digest, let the tool model summarise long results."""
    llm_summary_over_tokens: int = 800
    """Only results longer than this (after the digest) are summarised by the tool model."""
    timeout_s: float = 30.0
    kubectl_bin: str = "kubectl"
    actions: list[str] = field(default_factory=list)
    """Mutating commands that succeeded (the agent output's ``mitigation_actions``)."""
    notes: dict[str, Any] = field(default_factory=dict)
    """Scratch space (e.g. NL2 attempts of the last call) for trajectory events."""

    @classmethod
    def for_task(cls, task: Task, **settings: Any) -> ToolContext:
        """The context an agent's tools get for ``task`` (its endpoints, namespaces, workdir, masking);
        ``settings`` sets the other fields."""
        return cls(
            endpoints=task.endpoints,
            namespaces=list(task.namespaces),
            on_twin=task.on_twin,
            workdir=task.workdir,
            masked=set(task.masked),
            **settings,
        )

    @property
    def kubeconfig(self) -> str:
        """The credential for this phase: the read-only one while diagnosing (when the environment
        gave one), else the task's."""
        if self.phase == "diagnosis" and self.endpoints.kubeconfig_readonly:
            return self.endpoints.kubeconfig_readonly
        return self.endpoints.kubeconfig

    def kube_headers(self) -> dict[str, str]:
        """``Authorization`` for direct calls to the Kubernetes API (e.g. the twin's clock)."""
        from ..core.endpoints import kubeconfig_token

        token = kubeconfig_token(self.kubeconfig)
        return {"Authorization": f"Bearer {token}"} if token else {}

    def require(self, what: str) -> str:
        """The URL of an observability endpoint, or a ToolError when it is absent or masked."""
        from .errors import ToolError

        key = {"prometheus": "prometheus_url", "loki": "loki_url", "jaeger": "jaeger_url"}[what]
        masked = {"prometheus": "metrics", "loki": "logs", "jaeger": "traces"}[what]
        url = getattr(self.endpoints, key)
        if masked in self.masked or what in self.masked:
            raise ToolError(f"{masked} are not available in this environment")
        if not url:
            raise ToolError(f"no {what} endpoint is configured for this environment")
        return str(url).rstrip("/")
