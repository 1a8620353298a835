"""A no-fault control must not alert by chance. At the wall-clock minute below, the otel-demo
control once false-alerted ``HighRequestLatency{service_name="llm"}``: a few dozen LLM spans an
interval, modelled at p95 900 ms, put the histogram's p95 over 1500 ms. The demo's mock LLM answers
at once (product-reviews does not stream), as the app model now says."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from itbench_agents.harness import twin_backend
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.twin.clock import DEFAULT_LEAD_S, VirtualClock

ONCE_FALSE_ALERTED = 1796467860.0  # 2026-12-05T10:51:00Z


@pytest.mark.slow
def test_the_otel_demo_control_is_quiet_at_the_minute_it_once_alerted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def clock(history_s: float, grid_s: float = 60.0) -> VirtualClock:
        start = math.floor((ONCE_FALSE_ALERTED - history_s - DEFAULT_LEAD_S) / grid_s) * grid_s
        return VirtualClock.paused_at(start)

    monkeypatch.setattr(twin_backend, "harness_clock", clock)
    cfg = RunConfig(scenarios=["sre/control-otel-demo-healthy-v1"], agents=[AgentSpec(name="sre-heuristic")])
    _, specs, _ = start_run(tmp_path / "run", cfg, ScenarioRegistry.default())
    run_batch(tmp_path / "run", specs)
    (record,) = read_episodes(tmp_path / "run")
    assert record.termination == "submitted", record.error
    assert record.diagnosis is not None and record.diagnosis.correct, record.diagnosis
