"""The same episode at another wall-clock minute gives the same record. The twin starts on a whole
minute (FinOps: a whole hour, for the cost rules' hourly grid) and its telemetry is keyed on time
since then, so the alerts fire at the same moment and every score but the agent's own timing repeats.
Before, ``frontend-http-delay``'s alert fired after 60 s at one minute and 90 s at another, and the
forgotten load test's cost alert after 900 s or 1,080 s."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from itbench_agents.harness import twin_backend
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.twin.clock import DEFAULT_LEAD_S, VirtualClock

MINUTES = (1_796_467_860.0, 1_796_468_880.0)  # 10:51 and 11:08 UTC on 2026-12-05
SCENARIOS = ["sre/frontend-http-delay-v1", "finops/forgotten-load-test-v1"]


def outcome_at(wall: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    def clock(history_s: float, grid_s: float = 60.0) -> VirtualClock:
        return VirtualClock.paused_at(math.floor((wall - history_s - DEFAULT_LEAD_S) / grid_s) * grid_s)

    monkeypatch.setattr(twin_backend, "harness_clock", clock)
    folder = tmp_path / f"run-{int(wall)}"
    cfg = RunConfig(scenarios=SCENARIOS, agents=[AgentSpec(name="noop")])
    _, specs, _ = start_run(folder, cfg, ScenarioRegistry.default())
    run_batch(folder, specs)
    out = {}
    for r in read_episodes(folder):
        assert r.termination == "submitted", r.error
        assert r.mitigation is not None
        out[r.scenario_id] = {
            "alerts_fired_twin_s": r.timing.alerts_fired_twin_s,
            "alerts_firing": r.mitigation.alerts_firing,
            "passed": r.mitigation.passed,
            "checks": [(c.name, c.ok) for c in r.mitigation.checks],
            "scores": {k: float(v.value) for k, v in r.scores.items()},
        }
    return out


@pytest.mark.slow
def test_an_episode_at_another_minute_is_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = (outcome_at(m, tmp_path, monkeypatch) for m in MINUTES)
    assert first.keys() == set(SCENARIOS)
    # the agent's turn runs on the wall clock: scores measured after it may move in the 5th digit
    scores = [{s: o.pop("scores") for s, o in run.items()} for run in (first, second)]
    assert first == second
    for scenario in SCENARIOS:
        assert scores[0][scenario] == pytest.approx(scores[1][scenario], abs=1e-3), scenario
    assert scores[0]["finops/forgotten-load-test-v1"]  # the proximity metrics were compared
    assert all(o["alerts_fired_twin_s"] is not None and o["alerts_firing"] for o in first.values())
