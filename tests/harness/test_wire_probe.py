"""The wire probe (issue 30, step 2): the user journeys sent as HTTP requests through the API
server's service proxy and the consumers checked in Prometheus agree with the twin's own probe,
journey by journey, with the fault in place and after the reference mitigation."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import config

from itbench_agents.harness.app_data import AppData
from itbench_agents.harness.backend import ProvisionRequest
from itbench_agents.harness.probe_agreement import probe_agreement
from itbench_agents.harness.twin_backend import TwinBackend
from itbench_agents.harness.wire_probe import WireProbe
from itbench_agents.scenario.registry import ScenarioRegistry


def test_without_prometheus_the_consumers_are_said_unchecked(tmp_path: Path) -> None:
    twin = TwinBackend()
    twin.provision(ProvisionRequest(app="otel-demo", seed=1, history_s=600, folder=tmp_path))
    try:
        kube = config.new_client_from_config(config_file=twin.endpoints.kubeconfig)
        journeys = {j.name: j for j in WireProbe(kube, AppData.load("otel-demo"), "otel-demo").journeys()}
        assert all(j.ok for j in journeys.values())
        assert (
            "not checked (no kafka_consumergroup_lag): accounting orders receive"
            in journeys["checkout"].detail
        )
        assert "not checked" not in journeys["home"].detail
        assert WireProbe(kube, AppData(None), "otel-demo").journeys() == []
    finally:
        twin.close()


@pytest.mark.slow  # whole scenarios
@pytest.mark.parametrize(
    "scenario",
    [
        "sre/ad-scaled-to-zero-v1",  # a request step fails, then passes
        "sre/accounting-scaled-to-zero-v1",  # a consumer's lag grows: only Prometheus sees it
        "sre/kafka-queue-problems-flag-v1",  # a flag slows the consumers
        "sre/hotel-geo-scaled-to-zero-v1",  # the other app
    ],
)
def test_the_wire_probe_agrees_with_the_twins_on_a_fault_and_its_fix(scenario: str) -> None:
    result = probe_agreement(ScenarioRegistry.default().get(scenario))
    assert not result.error, result.error
    fault, mitigated = result.comparisons
    assert not all(fault.own.values()), "the fault breaks a journey (the comparison is not vacuous)"
    assert all(mitigated.own.values())
    for comp in (fault, mitigated):
        assert comp.disagreements == [], (comp.state, comp.details)
