"""A CISO agent's credential and end state, through the real kubectl (issue 28 slice 3): it may
create and edit Kyverno policies and read the evidence, nothing else; what it leaves in the cluster
is scored by executing it on fresh environments."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support.kubectl_cluster import KUBECTL, run_kubectl

from itbench_agents.harness.access import grant_access, write_agent_kubeconfigs
from itbench_agents.k8s.client import KubeApi
from itbench_agents.personas.ciso.access import ciso_cluster_rules
from itbench_agents.personas.ciso.environment import bring_up
from itbench_agents.personas.ciso.library import ciso_library
from itbench_agents.personas.ciso.score import score_cluster
from itbench_agents.personas.ciso.spec import CisoScenario

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl binary not installed")
BY_ID = {s.id: s for s in ciso_library()}


class Agent:
    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.kubeconfig, *args, input=stdin)


def _episode(scenario: CisoScenario, tmp_path: Path) -> Iterator[tuple[Agent, KubeApi]]:
    twin = bring_up(scenario, "violating")
    endpoints = twin.serve(tmp_path / "twin")
    try:
        admin = KubeApi(endpoints.kube_url, token=twin.admin_token)
        token = grant_access(admin, "ciso-agent", ciso_cluster_rules())
        creds = write_agent_kubeconfigs(
            endpoints.kubeconfig, [scenario.namespace], tmp_path / "work", token, token
        )
        yield Agent(creds.kubeconfig), admin
    finally:
        twin.close()


@pytest.fixture
def host_network(tmp_path: Path) -> Iterator[tuple[Agent, KubeApi]]:
    yield from _episode(BY_ID["ciso/kyverno-host-network-v1"], tmp_path)


def test_the_credential_writes_policies_and_nothing_else(host_network: tuple[Agent, KubeApi]) -> None:
    agent, _ = host_network
    assert agent.kubectl("get", "deploy,pods", "-n", "paa").returncode == 0  # evidence is readable
    assert agent.kubectl("get", "polr,cpol", "-A").returncode == 0
    for args in (
        ("-n", "paa", "delete", "deploy", "nginx-deployment"),
        (
            "-n",
            "paa",
            "patch",
            "deploy",
            "nginx-deployment",
            "-p",
            '{"spec":{"template":{"spec":{"hostNetwork":false}}}}',
        ),
        ("-n", "kyverno", "scale", "deploy", "kyverno-admission-controller", "--replicas=0"),
        ("get", "secrets", "-A"),
    ):
        res = agent.kubectl(*args)
        assert res.returncode != 0 and "Forbidden" in res.stderr, (args, res.stderr)
    exception = {
        "apiVersion": "kyverno.io/v2",
        "kind": "PolicyException",
        "metadata": {"name": "x", "namespace": "paa"},
        "spec": {
            "exceptions": [{"policyName": "p", "ruleNames": ["r"]}],
            "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        },
    }
    assert "Forbidden" in agent.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(exception)).stderr
    assert agent.kubectl("auth", "can-i", "create", "clusterpolicies.kyverno.io").stdout.strip() == "yes"


def test_the_reference_applied_with_kubectl_scores_on_both_columns(
    host_network: tuple[Agent, KubeApi],
) -> None:
    agent, admin = host_network
    scenario = BY_ID["ciso/kyverno-host-network-v1"]
    assert score_cluster(scenario, admin).detected is False  # nothing deployed yet
    res = agent.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(scenario.reference))
    assert res.returncode == 0, res.stderr
    assert agent.kubectl("get", "polr", "-n", "paa").returncode == 0
    assert score_cluster(scenario, admin).strict


def test_an_update_agent_edits_in_place_and_scores(tmp_path: Path) -> None:
    scenario = BY_ID["ciso/kyverno-update-run-as-non-root-v1"]
    for agent, admin in _episode(scenario, tmp_path):
        assert not score_cluster(scenario, admin).detected  # the deployed policies as they are
        res = agent.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(scenario.reference[0]))
        assert res.returncode == 0, res.stderr
        score = score_cluster(scenario, admin)
        assert score.strict and not score.changed, score
        agent.kubectl("delete", "cpol", "service-account-requirements")
        assert not score_cluster(scenario, admin).detected  # a policy removed: zero
