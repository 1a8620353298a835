"""EpisodeRecords for tests that count or compare scores (no run folder needed)."""

from __future__ import annotations

from itbench_agents.evaluation.diagnosis import DiagnosisScore
from itbench_agents.harness.records import EpisodeRecord, MitigationScore, Score, Timing


def episode(
    sid: str,
    agent: str,
    diag: bool,
    mit: bool | None,
    *,
    trial: int = 0,
    termination: str = "submitted",
    scores: dict[str, float] | None = None,
) -> EpisodeRecord:
    """One scored episode; ``mit=None``: nothing to mitigate (a no-fault control's shape)."""
    return EpisodeRecord(
        episode_id=f"{sid}__{agent}__{trial}",
        run_id="r",
        scenario_id=sid,
        agent=agent,
        trial=trial,
        seed=trial,
        masked=[],
        termination=termination,  # type: ignore[arg-type]
        started_at="",
        finished_at="",
        wall_s=1.0,
        diagnosis=DiagnosisScore(correct=diag, ntam_fl=1.0 if diag else 0.0),
        mitigation=MitigationScore(applicable=mit is not None, passed=bool(mit)),
        timing=Timing(agent_wall_s=1.0, agent_twin_s=1.0),
        bucket="easy",
        category="Other",
        scores={k: Score(value=v) for k, v in (scores or {}).items()},
    )
