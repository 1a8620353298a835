"""A CISO episode's environment, in the harness's lifecycle (``harness/environment.py``):

    deploy   the twin with Kyverno running and an OPA beside it (and, for ``kyverno-update``, the
             policies in force)
    inject   the scenario's namespace and its violating workload (``rhel-opa``: the violating RHEL
             host twin, served for Ansible)
    task     the goal (the paper's template) and a credential that may read the cluster and write
             Kyverno policies, nothing else (``access.py``)
    scores   the policies the agent left in the cluster, read through the API and executed on fresh
             violating and compliant environments (``score.py``): ``detected`` (the paper's pass,
             ITBench's ``generate_assessment_posture``), ``compliant_clean``, ``strict`` (both), and
             ITBench's other output tasks ``generate_policy`` and ``evidence_available``

There are no alerts to wait for and nothing to mitigate: the harness records ``scores`` instead of
a diagnosis and a mitigation. The agent's turn runs on wall time (Kyverno's reports controller
rescans as it would on a cluster); the harness's own steps run on a paused clock.
"""

from __future__ import annotations

import datetime as _dt
import math
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ...core.endpoints import Endpoints, kubeconfig_cluster, kubeconfig_yaml
from ...core.score import Score
from ...core.task import Limits, Task
from ...harness.access import grant_access, revoke_agent_access
from ...harness.environment import AlertCheck, EnvironmentError_
from ...k8s.client import KubeApi
from ...twin.advance_budget import advanced_by_agent, end_agent_turn, start_agent_turn
from ...twin.clock import VirtualClock
from .access import ciso_cluster_rules
from .environment import place_workload, start_cluster
from .host_score import INVENTORY, find_playbook_answer, host_of, score_playbook
from .rego_score import RegoScore, find_answer, rego_scores, score_rego
from .score import PolicyScore, cluster_policies, policy_generated, score_policies
from .spec import CisoScenario

AGENT_SA = "ciso-agent"
SETTLE_S = 5.0
"""Twin seconds after the agent's turn (the last reports are written; the score does not read them)."""


class CisoEnvironment:
    def __init__(self, scenario: CisoScenario, *, seed: int, workdir: str | Path) -> None:
        self.scenario = scenario
        self.seed = seed
        self.workdir = Path(workdir).resolve()
        self.answers = self.workdir
        """Where file answers are read: the work folder, or its copy taken when the turn ended."""
        """The agent's work folder (its kubeconfig goes here)."""
        self.private = Path(tempfile.mkdtemp(prefix="itbench-harness-"))
        """The harness's own folder (the admin kubeconfig); never given to agents."""
        self.twin: Any = None
        self.api: KubeApi | None = None
        self.token: str | None = None
        self.policy_score: PolicyScore | None = None
        self.rego_score: RegoScore | None = None
        self.host: Any = None
        """``rhel-opa``: the served violating host (``twin.host.ansible.ServedHost``)."""

    # ------------------------------------------------------------------ lifecycle
    def deploy(self) -> None:
        start = math.floor(time.time() / 60.0) * 60.0
        try:
            self.twin = start_cluster(self.scenario, seed=self.seed, clock=VirtualClock.paused_at(start))
            self.twin.admin_token = secrets.token_urlsafe(32)
            endpoints = self.twin.serve(self.private)
        except Exception as e:
            raise EnvironmentError_(f"deploy Kyverno: {type(e).__name__}: {e}") from e
        self.api = KubeApi(endpoints.kube_url, token=self.twin.admin_token)

    def inject(self) -> list[str]:
        if self.scenario.task_class == "rhel-opa":
            from ...twin.host.ansible import ServedHost

            host = host_of(self.scenario, "violating", self.private / "host")
            self.host = ServedHost(host).start()
            return [f"created host {host.hostname} (RHEL 9.4)"]
        return place_workload(self.twin, self.scenario, "violating")

    def wait_for_alerts(self) -> AlertCheck:
        return AlertCheck()  # a compliance task has no incident to wait for

    def grant_access(self) -> None:
        assert self.api is not None
        self.token = grant_access(self.api, AGENT_SA, ciso_cluster_rules(self.scenario.task_class))

    def score_from(self, folder: Path) -> None:
        """Score the files the work folder held when the agent's turn ended (``folder``, the
        harness's copy), whatever a late writer does to the live folder."""
        self.answers = Path(folder)

    def revoke_access(self) -> None:
        """The agent's turn is over: its token stops working (no late policy counts)."""
        if self.api is not None and self.token is not None:
            revoke_agent_access(self.api, (AGENT_SA,))

    def task(self, limits: Limits) -> Task:
        """The goal names the agent's kubeconfig; from now on the twin follows wall time and the
        seconds the agent fast-forwards count against ``limits.wall_time_s``."""
        if self.token is None:
            self.grant_access()
        assert self.token is not None
        server, ca_data = kubeconfig_cluster(self.twin.endpoints.kubeconfig)
        self.workdir.mkdir(parents=True, exist_ok=True)
        kubeconfig = self.workdir / "kubeconfig"
        kubeconfig.write_text(
            kubeconfig_yaml(
                server,
                context="itbench",
                namespace=self.scenario.namespace,
                token=self.token,
                ca_data=ca_data,
            )
        )
        kubeconfig.chmod(0o600)
        # as the SRE task's: kubectl reads the https server of the kubeconfig, HTTP clients kube_url
        inventory = None
        if self.host is not None:
            from ...twin.host.ansible import inventory_text

            inventory = self.workdir / INVENTORY
            inventory.write_text(inventory_text([self.host]))
            inventory.chmod(0o600)
        endpoints = Endpoints(
            kubeconfig=str(kubeconfig.resolve()),
            kube_url=self.twin.endpoints.kube_url,
            opa_url=self.twin.endpoints.opa_url,  # command agents get `opa` on PATH with OPA_URL
            ansible_inventory=str(inventory.resolve()) if inventory else None,
        )
        endpoints.write(self.workdir / "endpoints.json")
        start_agent_turn(self.twin, limits.wall_time_s)
        return Task(
            goal=self.scenario.goal(
                str(kubeconfig.resolve()), str(self.workdir), str(inventory.resolve()) if inventory else ""
            ),
            kind="compliance",
            persona="ciso",
            endpoints=endpoints,
            workdir=str(self.workdir),
            limits=limits,
            namespaces=[self.scenario.namespace] if self.scenario.namespace else [],
            on_twin=True,
        )

    def now(self) -> float:
        return float(self.twin.now())

    def advanced_by_agent_s(self) -> float:
        return advanced_by_agent(self.twin)

    def settle(self) -> None:
        end_agent_turn(self.twin)
        self.twin.advance(SETTLE_S)

    # ------------------------------------------------------------------ end state
    def scores(self) -> dict[str, Score]:
        """Execute the policies the agent left (read with the harness's credential) on fresh
        environments; the agent's own cluster is never trusted for the verdict."""
        assert self.api is not None
        if self.scenario.task_class == "rhel-opa":  # a playbook and a policy, run against fresh hosts
            playbook, policy, why = find_playbook_answer(self.answers)
            rego = (
                score_playbook(self.scenario, playbook, policy)
                if playbook and policy
                else RegoScore(False, why)
            )
            self.rego_score = rego
            return rego_scores(rego)
        if self.scenario.task_class == "k8s-opa":  # the answer is files: executed on fresh environments
            script, policy, why = find_answer(self.answers)
            rego = (
                score_rego(self.scenario, script, policy, seed=self.seed)
                if script and policy
                else RegoScore(False, why)
            )
            self.rego_score = rego
            return rego_scores(rego)
        policies = cluster_policies(self.api)
        self.policy_score = result = score_policies(self.scenario, policies, seed=self.seed)
        generated = policy_generated(self.scenario, policies)
        return policy_scores(result, [_key(p) for p in policies], generated)

    def privileged_context(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "kube_url": self.twin.endpoints.kube_url,
            "now": lambda: _dt.datetime.fromtimestamp(self.now(), _dt.UTC),
        }

    def teardown(self) -> None:
        if self.host is not None:
            self.host.stop()
        if self.twin is not None:
            self.twin.close()
        shutil.rmtree(self.private, ignore_errors=True)


SCORES = ("detected", "compliant_clean", "strict", "generate_policy", "evidence_available")
"""The paper's pass, compliance validation, both, and ITBench's two other output tasks."""


def policy_scores(
    result: PolicyScore, policies: list[str], generated: tuple[bool, str] = (True, "")
) -> dict[str, Score]:
    """The episode's scores from a :class:`PolicyScore`; each explains itself from the reports.
    ``generated``: whether the agent's policy is there (``score.policy_generated``) and why."""
    meta: dict[str, Any] = {"policies": policies}
    if result.refused:
        why = f"Kyverno refused a policy: {result.refused}"
        return {k: Score(value=0.0, explanation=why, metadata=meta) for k in SCORES}
    v, c = result.violating, result.compliant
    if result.changed:
        detected_why = "policies changed beyond the edit: " + ", ".join(result.changed)
    elif v is not None and v.failing:
        detected_why = "failing results on the violating workload: " + ", ".join(v.failing)
    else:
        detected_why = "no failing result on the violating workload" + (
            "" if policies else " (no policy deployed)"
        )
    if c is not None and c.detected:
        clean_why = "failing results on the compliant workload: " + ", ".join(c.failing)
    elif c is not None and not c.evidence:
        clean_why = "no policy reported on the compliant workload"
    else:
        clean_why = "the compliant workload is reported and passes"
    return {
        "detected": Score(value=float(result.detected), explanation=detected_why, metadata=meta),
        "compliant_clean": Score(value=float(result.compliant_clean), explanation=clean_why, metadata=meta),
        "strict": Score(
            value=float(result.strict), explanation=f"{detected_why}; {clean_why}", metadata=meta
        ),
        "generate_policy": Score(value=float(generated[0]), explanation=generated[1], metadata=meta),
        "evidence_available": Score(
            value=float(bool(v and v.evidence)),
            explanation="a report is scoped to the violating workload"
            if v and v.evidence
            else "no report is scoped to the violating workload",
            metadata=meta,
        ),
    }


def _key(policy: dict[str, Any]) -> str:
    meta = policy.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{policy.get('kind')}/{ns + '/' if ns else ''}{meta.get('name')}"
