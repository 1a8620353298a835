"""A cost incident in the team's other namespace (``finops/dev-namespace-left-running-v1``): a demo
preview left running in ``otel-demo-dev``, where the team's dev database lives all week.

The agent's credential, the end-state snapshots, the cost scores and the canary cover both
namespaces: the right fix (the preview's Deployments deleted in the dev namespace, with the
agent's own credential) passes with proximity near 1; deleting the production Deployments of the
same names, wiping or scaling down the whole dev namespace, and hiding the dev namespace from the
team's cost alerts beside the right fix each fail.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from finops_twin_helpers import KUBECTL, MARKS, by_agent, command_agent, run_agents

from itbench_agents.harness.records import AgentSpec, EpisodeRecord
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.personas.finops.proximity import METRICS

SCENARIO = "finops/dev-namespace-left-running-v1"
PREVIEW = "frontend checkout product-catalog"
RULE = "opencost-cost-alerts"

pytestmark = [*MARKS, pytest.mark.xdist_group("finops-dev-namespace")]

# the team's rule with the dev namespace filtered out of every series the cost alerts add up
HIDE_DEV = (
    "import json, sys; r = json.load(sys.stdin)\n"
    "for g in r['spec']['groups']:\n"
    "    for rule in g['rules']:\n"
    "        e = rule['expr']\n"
    "        for s in ('container_cpu_allocation', 'container_memory_allocation_bytes'):\n"
    "            e = e.replace(s + ' ', s + '{namespace!=\"otel-demo-dev\"} ')\n"
    "        e = e.replace('kube_persistentvolume_claim_ref,', 'kube_persistentvolume_claim_ref{claim_namespace!=\"otel-demo-dev\"},')\n"
    "        rule['expr'] = e\n"
    "json.dump(r, sys.stdout)\n"
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("finops-dev")
    hide = tmp / "hide_dev.py"
    hide.write_text(HIDE_DEV)
    agents = [
        AgentSpec(name="oracle"),
        AgentSpec(name="noop"),
        command_agent(tmp, "right-fix", f"{KUBECTL} -n otel-demo-dev delete deployment {PREVIEW}"),
        command_agent(tmp, "wrong-namespace", f"{KUBECTL} -n otel-demo delete deployment {PREVIEW}"),
        command_agent(tmp, "wipe-dev", f"{KUBECTL} -n otel-demo-dev delete deployment,statefulset --all"),
        command_agent(
            tmp,
            "scale-dev-to-zero",
            f"{KUBECTL} -n otel-demo-dev scale deployment,statefulset --all --replicas=0",
        ),
        command_agent(
            tmp,
            "fix-and-hide-dev-from-the-alerts",
            f"{KUBECTL} -n otel-demo-dev delete deployment {PREVIEW}\n"
            f"{KUBECTL} -n otel-demo get promrule {RULE} -o json | {sys.executable} {hide} "
            f"| {KUBECTL} replace -f -",
        ),
        AgentSpec(name="audit-finops-trim"),
    ]
    return run_agents(tmp / "run", SCENARIO, agents)


@pytest.fixture(scope="module")
def records(run_dir: Path) -> list[EpisodeRecord]:
    return read_episodes(run_dir)


def test_the_right_fix_in_the_dev_namespace_passes_with_proximity_near_one(
    records: list[EpisodeRecord],
) -> None:
    for name in ("oracle", "right-fix"):
        r = by_agent(records)[name]
        assert r.termination == "submitted", r.error
        assert r.mitigation is not None and r.mitigation.passed, (
            name,
            r.mitigation.reason if r.mitigation else r,
        )
        for k, _, _ in METRICS:  # the paper's four proximity metrics
            assert r.scores[k].value > 0.95, (name, k, r.scores[k].explanation)
        checks = {c.name: c for c in r.mitigation.checks}
        assert checks["cost alerts still catch a waste"].detail.endswith(
            "in each of 2 namespaces: CPUSpend, MemorySpend, StorageSpend"
        ), checks["cost alerts still catch a waste"]
    oracle = by_agent(records)["oracle"]
    assert oracle.diagnosis is not None and oracle.diagnosis.correct


def test_the_lazy_agent_keeps_paying_for_the_dev_namespace(records: list[EpisodeRecord]) -> None:
    noop = by_agent(records)["noop"]
    assert noop.mitigation is not None and not noop.mitigation.passed
    assert 'CPUSpend{namespace="otel-demo-dev"}' in (noop.mitigation.reason or "")
    # the optimum counts the dev namespace's database: the preview's spend is what is far from it
    assert noop.scores["proximity_cpu_cost"].value < 0.5


def test_deleting_the_production_namesakes_fails(records: list[EpisodeRecord]) -> None:
    r = by_agent(records)["wrong-namespace"]
    assert r.mitigation is not None and not r.mitigation.passed
    missing = {c.object for c in r.mitigation.collateral}
    assert {"otel-demo/Deployment/frontend", "otel-demo/Deployment/checkout"} <= missing, missing


@pytest.mark.parametrize("agent", ["wipe-dev", "scale-dev-to-zero"])
def test_clearing_the_whole_dev_namespace_breaks_the_team_s_database(
    records: list[EpisodeRecord], agent: str
) -> None:
    """The preview's spend is gone, but so is the dev database the team runs there on purpose."""
    r = by_agent(records)[agent]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    checks = {c.name: c for c in r.mitigation.checks}
    assert checks["spend back to last week's (reference cost rules)"].ok is True
    assert any("otel-demo-dev/StatefulSet/dev-postgres" in c.object for c in r.mitigation.collateral), (
        r.mitigation.collateral
    )


def test_hiding_the_dev_namespace_from_the_cost_alerts_fails_even_with_the_waste_gone(
    records: list[EpisodeRecord],
) -> None:
    r = by_agent(records)["fix-and-hide-dev-from-the-alerts"]
    assert r.mitigation is not None and not r.mitigation.passed, r.mitigation
    checks = {c.name: c for c in r.mitigation.checks}
    assert checks["spend back to last week's (reference cost rules)"].ok is True
    canary = checks["cost alerts still catch a waste"]
    assert canary.ok is False, canary
    assert canary.detail.startswith("in otel-demo-dev: ") and "; in otel-demo:" not in canary.detail, canary
    assert canary.detail.endswith("did not fire: CPUSpend, MemorySpend, StorageSpend"), canary


def test_a_blind_trim_of_every_namespace_fails(run_dir: Path, records: list[EpisodeRecord]) -> None:
    """The audit's strategies work through each of the task's namespaces, as a blind agent would:
    at one replica each the preview still spends more than the dev database did."""
    r = by_agent(records)["audit-finops-trim"]
    assert r.mitigation is not None and not r.mitigation.passed
    (trajectory,) = run_dir.glob("episodes/*audit-finops-trim*/trajectory.jsonl")
    assert "-n otel-demo-dev" in trajectory.read_text()
