"""The k8s-opa class (issue 29): the agent answers with a kubectl script and a Rego policy; the
scorer executes both on fresh violating and compliant environments. Every lazy or blind answer —
no files, a policy that always says false or true, a script that writes a constant file, one that
never ends, a policy that does not parse — must fail the strict column; the reference passes it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.personas.ciso.library import ciso_library
from itbench_agents.personas.ciso.rego_score import find_answer, score_rego
from itbench_agents.personas.ciso.spec import CisoScenario

HOST_NETWORK = "ciso/k8s-opa-host-network-v1"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl binary not installed")


@pytest.fixture(scope="module")
def scenario() -> CisoScenario:
    return next(s for s in ciso_library() if s.id == HOST_NETWORK)


def test_the_library_has_the_class(scenario: CisoScenario) -> None:
    opa = [s for s in ciso_library() if s.task_class == "k8s-opa"]
    assert len(opa) >= 15
    assert all(s.fetcher and s.rego and not s.reference for s in opa)
    goal = scenario.goal("/w/kubeconfig", "/w")
    assert "`policy.rego`" in goal and "`script.sh`" in goal and "collected_data.json" in goal
    assert "--kubeconfig" in goal and "namespace `paa`" in goal and "hostNetwork" not in goal


def test_the_schema_keeps_classes_apart(scenario: CisoScenario) -> None:
    doc = scenario.model_dump(by_alias=True)
    with pytest.raises(ValidationError, match="fetcher"):
        CisoScenario.model_validate({**doc, "fetcher": None})
    with pytest.raises(ValidationError, match="must not name a kubeconfig"):
        CisoScenario.model_validate({**doc, "fetcher": "kubectl --kubeconfig k get pods -o json"})
    with pytest.raises(ValidationError, match="no fetcher or rego"):
        CisoScenario.model_validate(
            {
                **doc,
                "class": "kyverno",
                "reference": [
                    {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "x"}}
                ],
            }
        )


ALWAYS = "package check\nimport rego.v1\nresult := {v}\n"


@pytest.mark.parametrize(
    ("label", "script", "policy"),
    [
        ("a policy that always says false", None, ALWAYS.format(v="false")),
        ("a policy that always says true", None, ALWAYS.format(v="true")),
        (
            "a constant file instead of kubectl",
            'echo \'{"items": [{"kind": "Pod", "spec": {"hostNetwork": true}}]}\' > collected_data.json',
            None,
        ),
        ("a script that never ends", "while true; do sleep 1; done", None),
        ("output that is not JSON", "kubectl get pods -n paa > collected_data.json", None),
        ("a policy that does not parse", None, "package check\nresult if {\n"),
        ("a policy with another package", None, "package policy\nimport rego.v1\nresult := false\n"),
        (
            "a script that tries to fix the cluster",
            'kubectl -n paa patch deploy nginx-deployment -p \'{"spec":{"template":{"spec":{"hostNetwork":false}}}}\'; kubectl get pods -n paa -o json > collected_data.json',
            ALWAYS.format(v="true"),
        ),
    ],
)
@needs_kubectl
def test_blind_answers_fail_the_strict_column(
    scenario: CisoScenario, label: str, script: str | None, policy: str | None
) -> None:
    r = score_rego(scenario, script or scenario.fetcher, policy or scenario.rego, timeout_s=1)
    assert not r.strict, (label, r)


@needs_kubectl
def test_the_reference_passes_and_explains(scenario: CisoScenario) -> None:
    r = score_rego(scenario, scenario.fetcher, scenario.rego)
    assert (
        r.required_files_exist
        and r.fetch_generates_data
        and r.violation_detection
        and r.compliance_validation
    )
    assert r.violating and r.violating.why == "data.check.result = false"
    assert r.compliant and r.compliant.why == "data.check.result = true"


def test_missing_and_linked_files_are_not_an_answer(tmp_path: Path) -> None:
    assert find_answer(tmp_path)[2] == "missing: script.sh, policy.rego"
    (tmp_path / "fetcher.sh").write_text("true\n")
    (tmp_path / "elsewhere.rego").write_text("package check\n")
    (tmp_path / "policy.rego").symlink_to(tmp_path / "elsewhere.rego")
    script, policy, why = find_answer(tmp_path)
    assert script is None and policy is None and "symbolic link" in why


@needs_kubectl
def test_episodes_oracle_noop_and_a_command_agent(tmp_path: Path) -> None:
    catalogue = Catalogue.default()
    scenario = next(s for s in ciso_library() if s.id == HOST_NETWORK)
    agent = tmp_path / "agent.sh"
    agent.write_text(
        f"cat > script.sh <<'EOF'\n{scenario.fetcher}EOF\n"
        f"cat > policy.rego <<'EOF'\n{scenario.rego}EOF\n"
        "bash script.sh\n"
        "opa eval --data policy.rego --input collected_data.json data.check.result --format raw > decision.txt\n"
        # its credential only reads: writing a Kyverno policy is refused
        "kubectl apply -f - <<'EOF' 2> apply.err || true\n"
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: x}\n"
        "spec: {rules: [{name: r, match: {any: [{resources: {kinds: [Pod]}}]}, validate: {message: m, deny: {}}}]}\nEOF\n"
    )
    cfg = RunConfig(
        scenarios=[HOST_NETWORK],
        agents=[AgentSpec(name="oracle"), AgentSpec(name="noop"),
                AgentSpec(name="command", label="right", command=["sh", str(agent)], config={"sandbox": "none"})],
    )  # fmt: skip
    _, specs, _ = start_run(tmp_path / "run", cfg, catalogue)
    run_batch(tmp_path / "run", specs)
    recs = {r.agent: r for r in read_episodes(tmp_path / "run")}
    for name in ("oracle", "right"):
        scores = {k: v.value for k, v in recs[name].scores.items()}
        assert scores["strict"] == 1.0 and scores["violation_detection"] == 1.0, (name, recs[name].scores)
    assert recs["noop"].scores["strict"].value == 0.0
    assert recs["noop"].scores["required_files_exist"].explanation == "missing: script.sh, policy.rego"
    work = tmp_path / "run" / "episodes" / recs["right"].episode_id / "work"
    assert (work / "decision.txt").read_text() == "false\n"
    assert "forbidden" in (work / "apply.err").read_text().lower()
