"""``itbench score RUN_DIR``: re-score a run from its files, without re-running any agent.

Uses each episode's ``output.json`` (the agent's output), ``topology.json`` and ``mitigation.json``
with the scenario's *current* ground truth, so a corrected ground truth or a new scorer version
can be applied to old runs. Episodes of other personas (CISO) keep the scores they were recorded
with: those come from executing the cluster's end state, which ended with the episode.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from ..core.output import AgentOutput
from ..evaluation.topology import Topology
from ..scenario.registry import ScenarioRegistry
from .episode import fill_times, read_output_fallback, score_outcome
from .records import EpisodeRecord, MitigationScore
from .runfolder import read_episodes, read_manifest, rewrite_episodes


def _load(path: Path, model: type) -> object | None:  # type: ignore[type-arg]
    if not path.exists():
        return None
    try:
        return model.model_validate_json(path.read_text())  # type: ignore[attr-defined]
    except (ValidationError, json.JSONDecodeError):
        return None


def rescore_run(
    run_dir: str | Path, registry: ScenarioRegistry | None = None, write: bool = True
) -> list[EpisodeRecord]:
    run_dir = Path(run_dir)
    read_manifest(run_dir)  # schema check
    registry = registry or ScenarioRegistry.default()
    out = []
    for rec in read_episodes(run_dir):
        if rec.persona != "sre":  # scored by executing an end state that is gone: kept as recorded
            out.append(rec)
            continue
        ep = run_dir / "episodes" / rec.episode_id
        scenario = registry.get(rec.scenario_id)
        output = _load(ep / "output.json", AgentOutput)
        if output is None:
            output = read_output_fallback(ep / "work")
        topo = Topology.read(ep / "topology.json") if (ep / "topology.json").exists() else None
        mit = _load(ep / "mitigation.json", MitigationScore)
        new = rec.model_copy(deep=True)
        new.diagnosis = score_outcome(scenario, rec.termination, output, topo)  # type: ignore[arg-type]
        if mit is not None and rec.scored:
            new.mitigation = mit  # type: ignore[assignment]
        new.category, new.complexity, new.bucket = (
            scenario.category,
            scenario.complexity,
            scenario.complexity_bucket,
        )
        fill_times(new.timing, new.diagnosis, new.mitigation, output)  # type: ignore[arg-type]
        out.append(new)
    if write:
        rewrite_episodes(run_dir, out)
    return out
