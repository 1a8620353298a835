"""What a run folder holds, as pydantic models (their JSON Schemas are published in docs/schemas/).

::

    runs/<run_id>/
      run.json                 RunManifest (resolved config, versions, git revision; written atomically)
      episodes.jsonl           one EpisodeRecord per finished episode (append-only, fsync'd)
      episodes/<episode_id>/
        trajectory.jsonl       typed events (core/events.py)
        output.json            the AgentOutput as returned
        mitigation.json        what the environment looked like after settling (alerts, probe)
        scores.json            a persona's named scores (CISO: detected, compliant_clean, strict)
        topology.json          the topology graph used by NTAM
        work/                  the agent's work folder (kubeconfig, agent_output.json, its artifacts)
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from ..core.output import Usage
from ..core.score import Score
from ..core.task import Limits, PersonaName
from ..evaluation.diagnosis import DiagnosisScore

SCHEMA_VERSION = 1

Termination = Literal[
    "submitted", "max_steps", "timeout", "cost_limit", "agent_error", "env_error", "harness_error"
]
UNSCORED: frozenset[str] = frozenset({"env_error", "harness_error"})
"""Terminations that say nothing about the agent: excluded from scores, counted as bad runs."""


class AgentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    """Registry name (``oracle``, ``noop``, ``command``, ``sre-react``...)."""
    model: str | None = None
    label: str | None = None
    """How this agent appears in tables (defaults to ``name`` or ``name:model``)."""
    command: list[str] | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    """Further ``AgentConfig`` fields (tool_model, base_url, api_key_env, tools, temperature,
    record_dir, replay_dir...)."""

    @property
    def display(self) -> str:
        if self.label:
            return self.label
        return f"{self.name}:{self.model}" if self.model else self.name


class RunConfig(BaseModel):
    """Everything that decides which episodes a run contains and how they run."""

    model_config = ConfigDict(extra="forbid")

    scenarios: list[str]
    agents: list[AgentSpec]
    trials: int = 1
    base_seed: int = 0
    masked: list[str] = Field(default_factory=list)
    limits: Limits = Field(default_factory=Limits)
    history_s: float = 3600.0
    settle_s: float | None = None
    """Override of each scenario's settle period (twin seconds)."""
    environment: str = "twin"
    """``twin``, or ``module:factory`` for a plug-in environment (the whole episode's lifecycle)."""
    backend: str = "twin"
    """What serves the cluster of the twin's scenario files (``harness/backends.py``): ``twin``, a
    plug-in's name, or ``module:attribute``."""
    churn: Literal["default", "none"] = "default"
    """Benign churn around each fault (``harness/churn.py``); ``none`` turns it off."""
    scenario_dirs: list[str] = Field(default_factory=list)
    """Folders of the user's own scenarios loaded beside the library (``--scenarios-dir``,
    ``ITBENCH_SCENARIO_PATH``), absolute: a resume loads them again."""
    skipped: dict[str, str] = Field(default_factory=dict)
    """Chosen scenarios the backend cannot run, with why (a live cluster without Chaos Mesh): left
    out of ``scenarios``, said in the report."""
    snapshots: str | None = None
    """The folder of recorded snapshots the episodes are served from (``itbench run --snapshots``;
    ``snapshots/``), absolute; None: the twin or ``backend``."""
    before_agent: str | None = None
    """``module:function`` called with (environment, episode folder) once the environment is ready
    and before the agent's turn (``itbench run --record-snapshots``: ``snapshots/record.py``'s)."""

    def identity(self) -> dict[str, Any]:
        """The part of the config that must match for a resume."""
        return self.model_dump(mode="json")


class RunManifest(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run_id: str
    created_at: str
    config: RunConfig
    versions: dict[str, str] = Field(default_factory=dict)
    git_revision: str | None = None
    episodes_planned: int = 0
    command: list[str] = Field(default_factory=list)


class EndStateCheckRecord(BaseModel):
    name: str
    ok: bool | None = None
    """None: not evaluated (e.g. no Prometheus endpoint)."""
    detail: str = ""


class CollateralRecord(BaseModel):
    object: str
    change: str
    """deleted, recreated, scaled_down, scaled_up, rolled_back, modified or created."""
    detail: str = ""
    keys: list[str] = Field(default_factory=list)
    """Configuration keys changed or removed (``<data key>`` or ``<data key>#<flag>``)."""


class MitigationScore(BaseModel):
    applicable: bool = True
    """False for no-fault controls (nothing to mitigate; excluded from mitigation rates)."""
    passed: bool = False
    alerts_firing: list[str] = Field(default_factory=list)
    """Expected alerts still firing after the settle period."""
    probe_ok: bool | None = None
    """Whether every user journey's functional probe passes."""
    probe_detail: str | None = None
    reason: str | None = None
    # End-state checks (harness/endstate.py; docs/metrics.md "Mitigation"). Optional with
    # defaults: run folders written before they existed still load.
    checks: list[EndStateCheckRecord] = Field(default_factory=list)
    """Each end-state check (alerts, journeys, traffic, observability, inventory, collateral)."""
    alerts_new: list[str] = Field(default_factory=list)
    """Every alert of the app's namespaces firing after settle that was not active at baseline."""
    journeys: dict[str, bool] = Field(default_factory=dict)
    """User journey → whether its probe passed."""
    traffic_ratio: float | None = None
    """Request rate after settle / baseline request rate."""
    observability_ok: bool | None = None
    missing: list[str] = Field(default_factory=list)
    """Baseline workloads, Services and PVCs gone after settle."""
    scaled_down: list[str] = Field(default_factory=list)
    """Baseline workloads below their baseline desired replicas."""
    collateral: list[CollateralRecord] = Field(default_factory=list)
    """Objects changed or deleted outside the fault's footprint (collateral damage)."""
    collateral_policy: str | None = None
    """``report``, ``destructive`` or ``any`` (whether collateral damage fails mitigation)."""
    restarted: list[str] = Field(default_factory=list)
    """Workloads outside the footprint that were only rolled (restart stamp): not collateral."""
    baseline: bool = False
    """Whether a baseline was taken (False: the legacy expected-alerts + probe check was used)."""

    @property
    def collateral_count(self) -> int:
        return len(self.collateral)


class Timing(BaseModel):
    """Times in wall seconds and in twin (virtual) seconds. ``inf`` = not achieved."""

    mttd_wall_s: float = math.inf
    mttd_twin_s: float = math.inf
    mttr_wall_s: float = math.inf
    mttr_twin_s: float = math.inf
    agent_wall_s: float = 0.0
    agent_twin_s: float = 0.0
    agent_advanced_twin_s: float = 0.0
    """Twin seconds the agent itself fast-forwarded (``POST /itbench/v1/advance``); they count
    against its wall-time limit together with ``agent_wall_s``."""
    diagnosis_twin_s: float | None = None
    """Twin seconds from the agent's start to the moment it reported its diagnosis
    (``AgentOutput.diagnosis_time_s`` read on the episode's wall/twin timeline); MTTD in twin
    seconds uses it, or ``agent_twin_s`` when the agent reports no moment."""
    alerts_fired_twin_s: float | None = None
    """Twin seconds from injection until every expected alert fired."""
    harness_overhead_s: float = 0.0
    """Wall seconds the harness spent outside the agent (deploy, inject, wait, settle, score); for
    an episode that shared its preparation, its ``1 / preparation_shared_by`` of that preparation."""
    preparation_shared_by: int = 1
    """How many episodes started from this episode's preparation (deploy, baseline, faults, alert
    wait; ``harness/shared.py``): 1 where it prepared its own. ``wall_s`` is the episode's own
    process, without the shared preparation."""

    @field_serializer("mttd_wall_s", "mttd_twin_s", "mttr_wall_s", "mttr_twin_s")
    def _inf(self, v: float) -> float | str:
        return "inf" if math.isinf(v) else v


class EpisodeRecord(BaseModel):
    schema_version: int = SCHEMA_VERSION
    episode_id: str
    run_id: str
    scenario_id: str
    agent: str
    """The agent's display label."""
    trial: int
    seed: int
    masked: list[str] = Field(default_factory=list)
    persona: PersonaName = "sre"
    """Whose scenario (a built-in persona or a plug-in's): SRE episodes and FinOps cost incidents
    carry ``diagnosis`` and ``mitigation``, the others ``scores``."""
    termination: Termination
    error: str | None = None
    started_at: str
    finished_at: str
    wall_s: float
    diagnosis: DiagnosisScore | None = None
    mitigation: MitigationScore | None = None
    scores: dict[str, Score] = Field(default_factory=dict)
    """A persona's named scores (CISO: ``detected``, ``compliant_clean``, ``strict``); empty for SRE
    episodes and for episodes that were not scored."""
    timing: Timing = Field(default_factory=Timing)
    usage: Usage = Field(default_factory=Usage)
    steps: int = 0
    category: str = ""
    complexity: float = 0.0
    bucket: str = ""
    control: bool = False
    signature: str | None = None
    """HMAC-SHA256 of the record under the run's key: set by the harness when it appends the
    record; readers skip lines without a valid one (``runfolder.check_episodes``)."""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.scenario_id, self.agent, self.trial)

    @property
    def scored(self) -> bool:
        return self.termination not in UNSCORED
