"""A signal whose exception some code on the way swallowed still stops the batch, unrecorded.

``test_interrupt`` sends real signals to a real run; here the signal arrives while the episode is
inside code that catches ``BaseException`` and returns an ``env_error`` record instead, as
promql-parser's wrappers once did. The batch must not keep that record (a resumed run would skip
the episode) and must stop as the first signal asks."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from itbench_agents.harness import batch, units
from itbench_agents.harness.batch import BatchInterrupted, interrupt_on_signals, run_batch, start_run
from itbench_agents.harness.episode import EpisodeSpec
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.harness.shared import crash_record
from itbench_agents.scenario.registry import ScenarioRegistry

SCENARIOS = ["sre/ad-failure-flag-v1", "sre/cart-failure-flag-v1"]


def _swallowing_episode(spec: EpisodeSpec, prepared: object = None) -> EpisodeRecord:
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(200):  # the handler runs in the main thread at the next check
            time.sleep(0.005)
    except BaseException as e:  # noqa: BLE001 - what a careless wrapper does
        return crash_record(spec, f"PromQLError: {type(e).__name__}").model_copy(
            update={"termination": "env_error"}
        )
    raise AssertionError("the signal never arrived")


def test_a_swallowed_signal_still_stops_the_batch_and_keeps_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = RunConfig(
        scenarios=SCENARIOS, agents=[AgentSpec(name="noop")], environment="itbench_fakes:make_env"
    )
    run_dir = tmp_path / "run"
    _, specs, _ = start_run(run_dir, cfg, ScenarioRegistry.default())
    monkeypatch.setattr(units, "run_episode", _swallowing_episode)
    restore = interrupt_on_signals()
    try:
        with pytest.raises(BatchInterrupted) as stopped:
            run_batch(run_dir, specs, concurrency=1)
    finally:
        restore()
    assert stopped.value.summary.ran == 0
    assert read_episodes(run_dir) == []
    units.stop_if_signalled()  # restored: later batches in this process (notebooks, tests) run


def test_a_new_batch_starts_without_the_last_ones_signal(tmp_path: Path) -> None:
    restore = interrupt_on_signals()
    try:
        with pytest.raises(batch.Interrupted):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(200):
                time.sleep(0.005)
    finally:
        restore()
    restore = interrupt_on_signals()  # a later batch in the same process (notebooks, tests)
    try:
        units.stop_if_signalled()
    finally:
        restore()
