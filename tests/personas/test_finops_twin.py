"""FinOps cost incidents on the twin (issue 16): a cost alert fires on OpenCost's metrics after a
week of past; the agent works with kubectl like an SRE; mitigation is the end state (the cost
alert cleared and the app working end to end, nothing healthy broken) and the proximity of the end
state's cost to the optimal one is recorded.

Cutting cost by breaking the app — scaling the namespace to zero, deleting its Deployments — clears
the cost alert and must still fail mitigation; the lazy agent keeps paying; the right fix, done
with the real kubectl, passes with proximity near 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from finops_twin_helpers import KUBECTL, MARKS, by_agent, command_agent, run_agents

from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, EpisodeRecord
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.personas.finops.proximity import METRICS
from itbench_agents.report.build import write_reports

LOAD_TEST = "finops/forgotten-load-test-v1"
RULE = "opencost-cost-alerts"

# one worker runs the module, so its preparation (the module fixture) is made once, not on each
pytestmark = [*MARKS, pytest.mark.xdist_group("finops-twin")]


FINOPS_REACT_DIAGNOSIS = {
    "entities": [
        {
            "name": "otel-demo/Deployment/load-test",
            "contributing_factor": True,
            "reasoning": "3 idle workers requesting 1 CPU and 1Gi each",
            "evidence": "OpenCost: deployment:load-test costs most, efficiency near 0",
        }
    ],
    "propagations": [],
    "alerts_explained": [{"alert": "CPUSpend", "explanation": "load-test's requests", "explained": True}],
}
FINOPS_REACT_TURNS = [
    {"tool_calls": [{"name": "opencost", "args": {"window": "1h", "aggregate": "controller"}}]},
    {
        "tool_calls": [
            {"name": "kubectl", "args": {"command": "get deployment load-test -n otel-demo -o yaml"}}
        ]
    },
    {"content": json.dumps(FINOPS_REACT_DIAGNOSIS)},
    {"tool_calls": [{"name": "kubectl", "args": {"command": "delete deployment load-test -n otel-demo"}}]},
    {"content": "Deleted the forgotten load-test Deployment; the CPU spend will fall back within the hour."},
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("finops-twin")
    agents = [
        AgentSpec(name="oracle"),
        AgentSpec(name="noop"),
        command_agent(tmp, "right-fix", f"{KUBECTL} -n otel-demo delete deployment load-test"),
        # the FinOps audit's strategies (agents/audit/finops_twin.py), as `scenarios audit --suite
        # finops` runs them on every cost incident: scaling to zero and deleting the app clear the
        # cost alert; a blind cost cutter (every HPA, Job, CronJob and DaemonSet deleted, every
        # workload at one replica with tiny requests) also removes the waste; the cost alerts are
        # the team's PrometheusRule, which the agent may edit, and silencing them instead of (or
        # beside) fixing the waste: each must fail
        AgentSpec(name="audit-finops-scale-to-zero"),
        command_agent(tmp, "delete-everything", f"{KUBECTL} -n otel-demo delete deployment --all"),
        AgentSpec(name="audit-finops-blanket-cutter"),
        AgentSpec(name="audit-finops-silence"),
        AgentSpec(name="audit-finops-trim"),
        command_agent(
            tmp,
            "fix-and-neuter-the-alert",
            f"{KUBECTL} -n otel-demo delete deployment load-test\n"
            f"{KUBECTL} -n otel-demo get promrule {RULE} -o json | sed 's/ 1[.]2 [*]/ 100 */g' "
            f"| {KUBECTL} replace -f -",
        ),
        # the right fix, and the storage alert renamed out of the way: nothing here spends on storage
        command_agent(
            tmp,
            "fix-and-drop-the-storage-alert",
            f"{KUBECTL} -n otel-demo delete deployment load-test\n"
            f"{KUBECTL} -n otel-demo get promrule {RULE} -o json "
            f'| sed \'s/"alert": "StorageSpend"/"alert": "StorageSpendRetired"/\' '
            f"| {KUBECTL} replace -f -",
        ),
    ]
    # finops-react with the scripted model: OpenCost, kubectl, the FinOps prompts
    script = tmp / "finops-react.yaml"
    script.write_text(yaml.safe_dump(FINOPS_REACT_TURNS))
    agents.append(AgentSpec(name="finops-react", label="finops-react", model=f"scripted:{script}"))
    return run_agents(tmp / "run", LOAD_TEST, agents)


@pytest.fixture(scope="module")
def records(run_dir: Path) -> list[EpisodeRecord]:
    return read_episodes(run_dir)


def test_the_oracle_and_the_right_fix_pass_with_proximity_near_one(records: list[EpisodeRecord]) -> None:
    for name in ("oracle", "right-fix"):
        r = by_agent(records)[name]
        assert r.persona == "finops" and r.termination == "submitted", r.error
        assert r.mitigation is not None and r.mitigation.passed, r.mitigation
        for k, _, _ in METRICS:  # the paper's four proximity metrics
            assert r.scores[k].value > 0.95, (name, k, r.scores[k].explanation)
    assert by_agent(records)["oracle"].diagnosis is not None and by_agent(records)["oracle"].diagnosis.correct


def test_the_lazy_agent_keeps_paying(records: list[EpisodeRecord]) -> None:
    noop = by_agent(records)["noop"]
    assert noop.mitigation is not None and not noop.mitigation.passed
    assert "CPUSpend" in (noop.mitigation.reason or "")
    assert noop.scores["proximity_cpu_cost"].value < 0.5


@pytest.mark.parametrize("strategy", ["audit-finops-scale-to-zero", "delete-everything"])
def test_cutting_cost_by_breaking_the_app_fails(records: list[EpisodeRecord], strategy: str) -> None:
    r = by_agent(records)[strategy]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    reason = r.mitigation.reason or ""
    assert "journeys" in reason or "inventory" in reason or "scaled" in reason, reason


def test_finops_react_finds_the_waste_with_opencost_and_removes_it(
    run_dir: Path, records: list[EpisodeRecord]
) -> None:
    r = by_agent(records)["finops-react"]
    assert r.termination == "submitted", r.error
    assert r.diagnosis is not None and r.diagnosis.correct, r.diagnosis
    assert r.mitigation is not None and r.mitigation.passed, r.mitigation.reason
    traj = (run_dir / "episodes" / r.episode_id / "trajectory.jsonl").read_text()
    events = [json.loads(line) for line in traj.splitlines()]
    seen = [e for e in events if e.get("type") == "observation" and e.get("tool") == "opencost"]
    assert seen and "deployment:load-test" in seen[0]["content"], seen


def test_a_blind_cost_cutter_fails(records: list[EpisodeRecord]) -> None:
    r = by_agent(records)["audit-finops-blanket-cutter"]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    checks = {c.name: c for c in r.mitigation.checks}
    starved = checks["no workload starved to cut cost"]
    assert starved.ok is False and "deployment:accounting/accounting uses" in starved.detail, starved
    for name in ("oracle", "right-fix"):  # the right fix starves nothing
        ok = {c.name: c.ok for c in by_agent(records)[name].mitigation.checks}  # type: ignore[union-attr]
        assert ok["no workload starved to cut cost"] is True


def test_a_blind_trim_breaks_what_the_namespace_runs_on_purpose(records: list[EpisodeRecord]) -> None:
    """Every HPA, CronJob and Job deleted and every workload at one replica: the FinOps protected
    baseline (harness/protected.py) has a workload kept at two replicas by its HPA and a suspended
    quarter-end CronJob, so the trim is collateral damage whatever else it fixes."""
    r = by_agent(records)["audit-finops-trim"]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    reason = r.mitigation.reason or ""
    assert "CronJob/quarter-end-close deleted" in reason and "HorizontalPodAutoscaler/" in reason, reason


def test_silencing_the_cost_alert_instead_of_fixing_fails(records: list[EpisodeRecord]) -> None:
    r = by_agent(records)["audit-finops-silence"]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    checks = {c.name: c for c in r.mitigation.checks}
    ref = checks["spend back to last week's (reference cost rules)"]
    assert ref.ok is False and "CPUSpend" in ref.detail, ref
    assert checks["cost alerts still catch a waste"].ok is False


def test_a_neutered_cost_alert_fails_even_with_the_waste_gone(records: list[EpisodeRecord]) -> None:
    r = by_agent(records)["fix-and-neuter-the-alert"]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    checks = {c.name: c for c in r.mitigation.checks}
    assert checks["spend back to last week's (reference cost rules)"].ok is True
    canary = checks["cost alerts still catch a waste"]
    assert canary.ok is False and "CPUSpend" in canary.detail and "MemorySpend" in canary.detail, canary


def test_dropping_the_storage_alert_fails_even_with_the_waste_gone(records: list[EpisodeRecord]) -> None:
    """The canary has an unmounted volume too: the team's StorageSpend must still catch it."""
    r = by_agent(records)["fix-and-drop-the-storage-alert"]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    checks = {c.name: c for c in r.mitigation.checks}
    assert checks["spend back to last week's (reference cost rules)"].ok is True
    canary = checks["cost alerts still catch a waste"]
    assert canary.ok is False and canary.detail.endswith("did not fire: StorageSpend"), canary


def test_the_right_fix_keeps_the_cost_alerts_working(records: list[EpisodeRecord]) -> None:
    checks = {c.name: c for c in by_agent(records)["right-fix"].mitigation.checks}  # type: ignore[union-attr]
    assert checks["spend back to last week's (reference cost rules)"].ok is True
    assert checks["cost alerts still catch a waste"].ok is True, checks["cost alerts still catch a waste"]


def test_the_report_has_table_6(run_dir: Path) -> None:
    md, _ = write_reports([run_dir])
    text = md.read_text()
    assert "## FinOps results (Table 6 layout)" in text and "## SRE results" not in text
    assert "| oracle | 100.00 ± n/a | 100.00 ± n/a | 1.00 ± n/a |" in text
    assert "| audit-finops-scale-to-zero | 0.00 ± n/a | 0.00 ± n/a |" in text


def test_suite_finops_holds_both_classes() -> None:
    cat = Catalogue.default()
    ids = {s.id for s in cat.select(suite="finops")}
    assert LOAD_TEST in ids and "finops/anomaly-price-change-v1" in ids
    assert {s.id for s in cat.select(suite="finops", ids=["forgotten-load-test-v1"])} == {LOAD_TEST}
    assert all(s.id.startswith("finops/anomaly") for s in cat.select(suite="finops:anomaly"))
