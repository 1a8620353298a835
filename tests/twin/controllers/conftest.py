"""Fixtures for the controller tests: a bare twin on a ManualClock with a scriptable runtime.
Everything drives the store directly (no HTTP)."""

from __future__ import annotations

import pytest
from ctl_helpers import ScriptedRuntime

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.instance import Twin


@pytest.fixture
def runtime() -> ScriptedRuntime:
    return ScriptedRuntime()


@pytest.fixture
def twin(runtime: ScriptedRuntime) -> Twin:
    return Twin(seed=0, clock=ManualClock(), runtime=runtime)
