"""The paper's cost-alert misconfiguration on the twin (finops/cost-alert-threshold-too-low-v1):
demand legitimately doubled, the team's CPUSpend threshold had been lowered to 1 % over last week's
spend, and the alert fires on healthy growth. The fix is the alert — the team's PrometheusRule,
which the agent may edit. Deleting the alert, a threshold no waste reaches, or cutting the demand
back clear the alert too, and must fail: the canary (a known waste the team's rule must still
catch) and the traffic check see them."""

from __future__ import annotations

import pytest
from finops_twin_helpers import KUBECTL, MARKS, command_agent

from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, MitigationScore, RunConfig
from itbench_agents.harness.runfolder import read_episodes

SCENARIO = "finops/cost-alert-threshold-too-low-v1"
RULE = "opencost-cost-alerts"

# one worker runs the module, so its preparation (the module fixture) is made once, not on each
pytestmark = [*MARKS, pytest.mark.xdist_group("finops-cost-alert")]


def _threshold(to: str) -> str:
    return f"{KUBECTL} -n otel-demo get promrule {RULE} -o json | sed 's/ 1[.]01 [*]/ {to} */' | {KUBECTL} replace -f -"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, EpisodeRecord]:
    tmp = tmp_path_factory.mktemp("finops-cost-alert")
    agents = [
        AgentSpec(name="noop"),  # the oracle's fix is proven by the library's validation
        command_agent(tmp, "sane-threshold", _threshold("1.25")),
        command_agent(tmp, "delete-the-alert", f"{KUBECTL} -n otel-demo delete prometheusrule {RULE}"),
        command_agent(tmp, "threshold-no-waste-reaches", _threshold("5")),
        command_agent(
            tmp, "cut-the-demand", f"{KUBECTL} -n otel-demo set env deployment/load-generator LOCUST_USERS=50"
        ),
    ]
    run_dir = tmp / "run"
    _, specs, _ = start_run(run_dir, RunConfig(scenarios=[SCENARIO], agents=agents), Catalogue.default())
    run_batch(run_dir, specs, share_prepared=True)
    return {r.agent: r for r in read_episodes(run_dir)}


def _mitigation(r: EpisodeRecord) -> MitigationScore:
    assert r.mitigation is not None, r.error
    return r.mitigation


def test_a_sane_threshold_passes(records: dict[str, EpisodeRecord]) -> None:
    m = _mitigation(records["sane-threshold"])
    assert m.passed, m.reason
    checks = {c.name: c.ok for c in m.checks}
    assert checks["cost alerts still catch a waste"] is True


def test_the_lazy_agent_keeps_the_false_alarm(records: dict[str, EpisodeRecord]) -> None:
    m = _mitigation(records["noop"])
    assert not m.passed and "CPUSpend" in (m.reason or ""), m.reason


@pytest.mark.parametrize("agent", ["delete-the-alert", "threshold-no-waste-reaches"])
def test_silencing_the_alert_fails_on_the_canary(records: dict[str, EpisodeRecord], agent: str) -> None:
    m = _mitigation(records[agent])
    assert not m.passed
    checks = {c.name: c for c in m.checks}
    assert checks["cost alerts still catch a waste"].ok is False, checks
    assert not m.alerts_firing  # the alert itself is quiet: only the canary tells


def test_cutting_the_demand_back_fails(records: dict[str, EpisodeRecord]) -> None:
    m = _mitigation(records["cut-the-demand"])
    assert not m.passed, m
    assert m.reason and ("traffic" in m.reason or "load-generator" in m.reason), m.reason
