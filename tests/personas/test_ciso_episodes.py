"""CISO episodes through the harness (issue 28, the persona seam): `itbench run --suite ciso` brings
up Kyverno on the twin, hands the agent a credential and the paper's goal, and scores the policies
the agent left by executing them on fresh violating and compliant environments.

A lazy agent (noop), a deny-everything policy, a tampering agent and a right policy that is refused
are each a strategy that must score zero on the strict column; the oracle and a right policy applied
with the real kubectl score one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.ciso_policies import HOST_NETWORK_POLICY
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.report.build import write_reports
from itbench_agents.scenario.registry import ScenarioSelectionError

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
needs_kubectl = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl binary not installed")
HOST_NETWORK = "ciso/kyverno-host-network-v1"
UPDATE = "ciso/kyverno-update-host-network-v1"
RIGHT_POLICY = HOST_NETWORK_POLICY
DENY_ALL = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: deny-everything}
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: nothing-passes
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {message: "no", deny: {}}
"""


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.default()


def _run(
    tmp_path: Path, catalogue: Catalogue, agents: list[AgentSpec], scenarios: list[str]
) -> list[EpisodeRecord]:
    cfg = RunConfig(scenarios=scenarios, agents=agents)
    run_dir = tmp_path / "run"
    _, specs, _ = start_run(run_dir, cfg, catalogue)
    run_batch(run_dir, specs)
    return read_episodes(run_dir)


def _strict(rec: EpisodeRecord) -> float:
    return rec.scores["strict"].value


def test_oracle_scores_one_and_noop_zero_on_both_classes(tmp_path: Path, catalogue: Catalogue) -> None:
    recs = _run(
        tmp_path, catalogue, [AgentSpec(name="oracle"), AgentSpec(name="noop")], [HOST_NETWORK, UPDATE]
    )
    by = {(r.agent, r.scenario_id): r for r in recs}
    for sid in (HOST_NETWORK, UPDATE):
        oracle, noop = by[("oracle", sid)], by[("noop", sid)]
        assert oracle.termination == "submitted" and oracle.persona == "ciso"
        assert {k: v.value for k, v in oracle.scores.items()} == dict.fromkeys(
            ("detected", "compliant_clean", "strict", "generate_policy", "evidence_available"), 1.0
        )
        assert noop.scores["generate_policy"].value == 0.0
        assert _strict(noop) == 0.0 and noop.scores["detected"].value == 0.0, noop.scores
        assert oracle.diagnosis is None and oracle.mitigation is None  # CISO episodes are not SRE-scored
    assert by[("oracle", UPDATE)].category == "kyverno-update"
    assert by[("noop", HOST_NETWORK)].scores["evidence_available"].value == 0.0  # nothing reports on it
    assert (
        by[("noop", UPDATE)].scores["generate_policy"].explanation == "container-security-controls not edited"
    )
    ep = tmp_path / "run" / "episodes" / by[("oracle", HOST_NETWORK)].episode_id
    assert json.loads((ep / "scores.json").read_text())["strict"]["value"] == 1.0
    assert "policy.yaml" in {p.name for p in (ep / "work").iterdir()}
    goal = next(
        json.loads(line)["detail"]["goal"]
        for line in (ep / "trajectory.jsonl").read_text().splitlines()
        if '"phase":"task"' in line
    )
    assert (
        "deploy a Kyverno policy" in goal
        and "kubeconfig" in goal
        and "hostNetwork" not in goal.split("\n")[0]
    )


def _agent(tmp_path: Path, name: str, script: str) -> AgentSpec:
    path = tmp_path / f"{name}.sh"
    path.write_text(script)
    return AgentSpec(name="command", label=name, command=["sh", str(path)], config={"sandbox": "none"})


@needs_kubectl
def test_command_agents_with_the_real_kubectl(tmp_path: Path, catalogue: Catalogue) -> None:
    """What an agent leaves in the cluster is what is scored; its credential cannot do more."""
    right = _agent(
        tmp_path,
        "right",
        f"kubectl apply -f - <<'EOF'\n{RIGHT_POLICY}EOF\n"
        "echo '{\"n\": 1}' | opa eval -I 'input.n + 1' -f raw > opa.txt\n",  # OPA runs beside Kyverno
    )
    deny_all = _agent(tmp_path, "deny-all", f"kubectl apply -f - <<'EOF'\n{DENY_ALL}EOF\n")
    tamper = _agent(  # make the workload compliant instead of writing a policy, and stop Kyverno
        tmp_path,
        "tamper",
        'kubectl -n paa patch deploy nginx-deployment -p \'{"spec":{"template":{"spec":{"hostNetwork":false}}}}\'\n'
        "kubectl -n kyverno scale deploy kyverno-admission-controller --replicas=0\n"
        "kubectl create -f - <<'EOF'\napiVersion: kyverno.io/v2\nkind: PolicyException\n"
        "metadata: {name: skip, namespace: paa}\nspec: {exceptions: [], match: {any: []}}\nEOF\n"
        f"kubectl apply -f - <<'EOF'\n{RIGHT_POLICY.replace('Audit', 'Enforce')}EOF\n",
    )
    recs = {r.agent: r for r in _run(tmp_path, catalogue, [right, deny_all, tamper], [HOST_NETWORK])}
    assert _strict(recs["right"]) == 1.0, recs["right"].scores
    work = tmp_path / "run" / "episodes" / recs["right"].episode_id / "work"
    assert (work / "opa.txt").read_text() == "2\n", (work / "agent_stderr.log").read_text()
    deny = recs["deny-all"].scores
    assert (
        deny["detected"].value == 1.0
        and deny["compliant_clean"].value == 0.0
        and _strict(recs["deny-all"]) == 0.0
    )
    assert "compliant workload" in deny["compliant_clean"].explanation
    stderr = (
        tmp_path / "run" / "episodes" / recs["tamper"].episode_id / "work" / "agent_stderr.log"
    ).read_text()
    assert stderr.count("Forbidden") >= 3, stderr  # the patch, the scale and the exception were refused
    # the Enforce policy it did deploy is scored like any other: executed on fresh environments
    assert _strict(recs["tamper"]) == 1.0


def test_catalogue_selects_ciso_suites_and_ids(catalogue: Catalogue) -> None:
    every = catalogue.select(suite="ciso")
    assert len(every) >= 25 and all(s.persona == "ciso" for s in every)
    update = catalogue.select(suite="ciso:kyverno-update")
    assert update and all(s.id.startswith("ciso/kyverno-update-") for s in update)
    assert [s.id for s in catalogue.select(suite="ciso", tags=["5.2.5"])] == sorted(
        s.id for s in every if "5.2.5" in s.cis
    )
    assert [s.id for s in catalogue.select(ids=[HOST_NETWORK])] == [HOST_NETWORK]
    assert catalogue.get("kyverno-host-network-v1").id == HOST_NETWORK  # a bare name
    mixed = catalogue.select(ids=["ciso/kyverno-update-host-*", "sre/ad-failure-flag-v1"])
    assert {s.persona for s in mixed} == {"sre", "ciso"}
    with pytest.raises(ScenarioSelectionError, match="not in suite 'sre'"):
        catalogue.select(ids=[HOST_NETWORK], suite="sre")
    with pytest.raises(ScenarioSelectionError, match="not in suite 'ciso'"):
        catalogue.select(ids=["sre/ad-failure-flag-v1"], suite="ciso")


def test_cli_run_report_and_resume(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = [
        "run",
        "--suite",
        "ciso",
        "-s",
        HOST_NETWORK,
        "-a",
        "oracle",
        "-a",
        "noop",
        "--run-dir",
        str(run_dir),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    # each agent counted apart (an oracle's pass is not half of a noop's run)
    assert "oracle: compliance (strict) 1/1; noop: compliance (strict) 0/1, errors 0" in res.output
    assert "diagnosis" not in res.output.split("done:")[1]  # no SRE counts for a CISO-only run
    report = (run_dir / "report.md").read_text()
    assert "## CISO results (Table 5 layout)" in report and "SRE results" not in report
    assert (
        "| oracle | 100.00 ± n/a | — | — | — | 100.00 ± n/a | 100.00 ± n/a | 100.00 ± n/a | 100.00 ± n/a | 100.00 ± n/a |"
        in report
    )
    assert (
        "| noop | 0.00 ± n/a | — | — | — | 0.00 ± n/a | 0.00 ± n/a | 0.00 ± n/a | 0.00 ± n/a | 0.00 ± n/a | — | 1 | 0 |"
        in report
    )
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "0 ran, 2 already done" in again.output
    before = {r.episode_id: r.scores for r in read_episodes(run_dir)}
    rescored = CliRunner().invoke(app, ["score", str(run_dir)])  # CISO scores are kept as recorded
    assert rescored.exit_code == 0, rescored.output
    assert {r.episode_id: r.scores for r in read_episodes(run_dir)} == before


def test_a_mixed_report_keeps_the_personas_apart(
    tmp_path: Path, catalogue: Catalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SRE tables count SRE episodes only; the CISO table its own."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "harness" / "plugins"))
    ciso = tmp_path / "ciso"
    ciso.mkdir()
    _run(ciso, catalogue, [AgentSpec(name="oracle")], [HOST_NETWORK])
    md, html = write_reports([ciso / "run", _sre_run(tmp_path)], out=tmp_path / "out")
    text = md.read_text()
    assert "## SRE results (Table 4 layout)" in text and "## CISO results (Table 5 layout)" in text
    sre_part = text[: text.index("## CISO results")]
    assert HOST_NETWORK not in sre_part
    assert "id='table5'" in html.read_text()


def _sre_run(tmp_path: Path) -> Path:
    """A small SRE run on the fake environment of the harness tests (tests/harness/plugins)."""
    cfg = RunConfig(
        scenarios=["sre/ad-failure-flag-v1"],
        agents=[AgentSpec(name="itbench_fakes:good")],
        environment="itbench_fakes:make_env",
    )
    run_dir = tmp_path / "sre"
    _, specs, _ = start_run(run_dir, cfg, Catalogue.default())
    run_batch(run_dir, specs)
    return run_dir


def test_an_agent_of_the_other_persona_is_refused_before_anything_runs(tmp_path: Path) -> None:
    runner = CliRunner()
    sre_on_ciso = runner.invoke(
        app, ["run", "--suite", "ciso", "-a", "sre-heuristic", "--run-dir", str(tmp_path / "a")]
    )
    assert sre_on_ciso.exit_code == 2
    assert "agent 'sre-heuristic' works on sre scenarios; the chosen ones include ciso" in sre_on_ciso.output
    ciso_on_sre = runner.invoke(
        app, ["run", "-s", "sre/ad-failure-flag-v1", "-a", "ciso-catalogue", "--run-dir", str(tmp_path / "b")]
    )
    assert ciso_on_sre.exit_code == 2 and "--suite ciso" in ciso_on_sre.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
