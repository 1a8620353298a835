"""What an agent hands back: the :class:`AgentOutput` envelope around its diagnosis, which follows
ITBench-Lite's ``agent_output.json`` contract::

    {"entities": [{"name": "otel-demo/Service/ad", "contributing_factor": true,
                   "reasoning": "...", "evidence": "..."}],
     "propagations": [{"source": "...", "target": "...", "condition": "...", "effect": "..."}],
     "alerts_explained": [{"alert": "...", "explanation": "...", "explained": true}]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


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


def write_agent_output(workdir: str | Path, output: AgentOutput) -> Path:
    """Write ``agent_output.json`` (the diagnosis, ITBench-Lite shape) into the work folder."""
    p = Path(workdir) / "agent_output.json"
    diag = output.diagnosis.model_dump() if output.diagnosis else {}
    p.write_text(json.dumps(diag, indent=2) + "\n")
    return p
