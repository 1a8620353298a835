"""``--mask``: a masked telemetry source is not in the agent's endpoints file at all (a command agent
is not held to the built-in tools' refusal), while the harness keeps it (alerts, the clock)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from itbench_agents.core.task import Limits
from itbench_agents.harness.twin_env import TwinEnvironment
from itbench_agents.scenario.registry import ScenarioRegistry


@pytest.mark.parametrize(
    ("masked", "gone"),
    [
        (["traces"], {"jaeger_url"}),
        (["logs", "metrics"], {"loki_url", "prometheus_url", "alertmanager_url"}),
    ],
)
def test_a_masked_source_is_left_out_of_the_agents_endpoints(
    tmp_path: Path, masked: list[str], gone: set[str]
) -> None:
    scenario = ScenarioRegistry.default().get("sre/hotel-geo-scaled-to-zero-v1")
    env = TwinEnvironment(scenario, seed=0, workdir=tmp_path / "work", masked=masked, history_s=120)
    try:
        env.deploy()
        task = env.task(Limits())
        written = json.loads((tmp_path / "work" / "endpoints.json").read_text())
        urls = {"jaeger_url", "loki_url", "prometheus_url", "alertmanager_url"}
        assert {k for k in urls if not written.get(k)} == gone
        assert {k for k in urls if not getattr(task.endpoints, k)} == gone
        assert env.endpoints.prometheus_url and env.endpoints.jaeger_url and env.endpoints.loki_url
        assert task.masked == masked
    finally:
        env.teardown()
