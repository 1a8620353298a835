"""ciso-react with the scripted model and the local OpenAI-protocol test server (issue 28): an
episode of each class completes; an answer Kyverno refuses, one that is not YAML and one that
reports no failure are fed back and fixed; an agent that never gets it right gives up with a zero,
no crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.ciso_policies import HOST_NETWORK_POLICY

from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.llm.scripted import ScriptedTurn
from itbench_agents.llm.testing_server import OpenAITestServer

HOST_NETWORK = "ciso/kyverno-host-network-v1"
UPDATE = "ciso/kyverno-update-host-ports-v1"
RIGHT = HOST_NETWORK_POLICY
REFUSED = RIGHT.replace('validate: {message: "hostNetwork is not allowed", ', "validate: {").replace(
    'pattern: {spec: {"=(hostNetwork)": false}}}', "}"
)
MATCHES_NOTHING = RIGHT.replace("kinds: [Pod]", "kinds: [ConfigMap]")


def _fenced(text: str) -> str:
    return f"Here is the policy:\n\n```yaml\n{text}```\n"


def _run(
    tmp_path: Path,
    scenario: str,
    turns: list[str],
    model: str | None = None,
    options: dict[str, object] | None = None,
    **config: object,
) -> tuple[EpisodeRecord, Path]:
    if model is None:
        script = tmp_path / "script.yaml"
        script.write_text(yaml.safe_dump([{"content": t} for t in turns]))
        model = f"scripted:{script}"
    agent = AgentSpec(name="ciso-react", model=model, options=dict(options or {}), config=dict(config))
    run_dir = tmp_path / "run"
    _, specs, _ = start_run(run_dir, RunConfig(scenarios=[scenario], agents=[agent]), Catalogue.default())
    run_batch(run_dir, specs)
    (rec,) = read_episodes(run_dir)
    return rec, run_dir / "episodes" / rec.episode_id


def _output(ep: Path) -> dict[str, object]:
    return json.loads((ep / "output.json").read_text())


def test_a_new_policy_after_feedback_from_kyverno_yaml_and_the_reports(tmp_path: Path) -> None:
    rec, ep = _run(
        tmp_path,
        HOST_NETWORK,
        ["no yaml here: [", _fenced(REFUSED), _fenced(MATCHES_NOTHING), _fenced(RIGHT)],
    )
    assert rec.termination == "submitted" and rec.scores["strict"].value == 1.0, rec.scores
    out = _output(ep)
    assert out["extra"]["attempts"] == 4 and out["extra"]["termination"] == "completed"
    assert rec.usage.model_calls == 4
    prompts = [
        json.loads(line)["prompt"]
        for line in (ep / "trajectory.jsonl").read_text().splitlines()
        if '"type":"model_call"' in line
    ]
    assert len(prompts) == 4
    traj = (ep / "trajectory.jsonl").read_text()
    assert "not valid YAML" in traj and "No operation defined in the rule 'host-network'" in traj
    assert "no report mentions the policy" in traj
    assert "no-host-network" in (ep / "work" / "policy.yaml").read_text()


def test_it_gives_up_after_its_retries_and_scores_zero(tmp_path: Path) -> None:
    rec, ep = _run(tmp_path, HOST_NETWORK, [_fenced(MATCHES_NOTHING)] * 5)
    assert rec.termination == "submitted" and rec.scores["strict"].value == 0.0
    out = _output(ep)
    assert out["extra"]["termination"] == "gave_up" and out["extra"]["attempts"] == 4
    assert rec.usage.model_calls == 4  # one try and three reflections


def test_an_update_through_the_openai_protocol_server(tmp_path: Path) -> None:
    scenario = Catalogue.default().get(UPDATE)
    edited = scenario.final_reference()
    target = next(p for p in edited if p["metadata"]["name"] == scenario.edit)
    turns = [ScriptedTurn(content=_fenced(yaml.safe_dump(target, sort_keys=False)))]
    with OpenAITestServer(turns) as srv:
        rec, ep = _run(tmp_path, UPDATE, [], model="openai/test-model", base_url=srv.url)
        assert rec.termination == "submitted", rec.error
        sent = srv.requests[0]["messages"][-1]["content"]
    assert (
        "service-account-requirements" in sent and "container-security-controls" in sent
    )  # the deployed ones
    assert rec.scores["strict"].value == 1.0, rec.scores["strict"].explanation


def test_an_update_with_the_scripted_model_edits_in_place(tmp_path: Path) -> None:
    """The deployed policies come back with server fields; the answer keeps the names, and a new
    policy instead of the edit scores zero."""
    scenario = Catalogue.default().get(UPDATE)
    target = next(p for p in scenario.final_reference() if p["metadata"]["name"] == scenario.edit)
    rec, ep = _run(tmp_path, UPDATE, [_fenced(yaml.safe_dump(target, sort_keys=False))])
    assert rec.scores["strict"].value == 1.0 and rec.scores["generate_policy"].value == 1.0
    assert "updated ClusterPolicy container-security-controls" in (ep / "output.json").read_text()
    renamed = {**target, "metadata": {"name": "host-ports-policy"}}
    (tmp_path / "new").mkdir()
    rec, _ = _run(tmp_path / "new", UPDATE, [_fenced(yaml.safe_dump(renamed, sort_keys=False))])
    assert rec.scores["strict"].value == 0.0
    assert "added host-ports-policy" in rec.scores["detected"].explanation


K8S_OPA = "ciso/k8s-opa-host-network-v1"
FETCH = "kubectl get pods -n paa -o json > collected_data.json\n"
RIGHT_REGO = (
    "package check\nimport rego.v1\n\ndefault result := false\n\n"
    "result if {\n  every pod in input.items {\n    not pod.spec.hostNetwork\n  }\n}\n"
)


def _files(script: str, rego: str) -> str:
    return f"The script:\n\n```bash\n{script}```\n\nThe policy:\n\n```rego\n{rego}```\n"


def test_k8s_opa_script_and_policy_after_feedback_from_opa(tmp_path: Path) -> None:
    rec, ep = _run(
        tmp_path,
        K8S_OPA,
        [
            "```yaml\nkind: ClusterPolicy\n```\n",  # not the files asked for
            _files(FETCH, "package check\nresult if {\n"),  # opa check refuses it
            _files(FETCH, "package check\nimport rego.v1\nresult := true\n"),  # finds no violation
            _files("kubectl --kubeconfig /tmp/k get pods -o json > collected_data.json\n", RIGHT_REGO),
            _files(FETCH, RIGHT_REGO),
        ],
        options={"max_retries": 5},
    )
    assert rec.scores["strict"].value == 1.0, rec.scores
    assert rec.scores["violation_detection"].value == 1.0
    out = _output(ep)
    assert out["extra"]["attempts"] == 5 and out["extra"]["termination"] == "completed"
    traj = (ep / "trajectory.jsonl").read_text()
    assert "no ```bash block" in traj and "opa check policy.rego: policy.rego:" in traj
    assert "data.check.result is true on the collected data" in traj and "must not name a kubeconfig" in traj
    work = ep / "work"
    assert (work / "policy.rego").read_text() == RIGHT_REGO and (work / "collected_data.json").is_file()


RHEL = "ciso/rhel-opa-ssh-x11-forwarding-v1"
RHEL_PLAYBOOK = """- hosts: rhel9_servers
  gather_facts: false
  tasks:
    - {command: sshd -T, register: sshd, changed_when: false}
    - ansible.builtin.copy:
        content: "{{ {'sshd': dict(sshd.stdout_lines | map('split', ' ', 1))} | to_json }}"
        dest: "{{ playbook_dir }}/collected_data.json"
      delegate_to: localhost
"""
RHEL_REGO = (
    'package check\nimport rego.v1\n\ndefault result := false\n\nresult if input.sshd.x11forwarding == "no"\n'
)


def _play(playbook: str, rego: str) -> str:
    return f"The playbook:\n\n```yaml\n{playbook}```\n\nThe policy:\n\n```rego\n{rego}```\n"


@pytest.mark.slow  # three ansible-playbook runs in the episode, two in its evaluation
def test_rhel_opa_playbook_and_policy_after_feedback(tmp_path: Path) -> None:
    rec, ep = _run(
        tmp_path,
        RHEL,
        [
            _play("hosts: rhel9_servers\n", RHEL_REGO),  # not a list of plays
            _play(RHEL_PLAYBOOK.replace("sshd -T", "sshd -Q"), RHEL_REGO),  # the playbook fails
            _play(RHEL_PLAYBOOK, "package check\nimport rego.v1\nresult := true\n"),  # finds no violation
            _play(RHEL_PLAYBOOK, RHEL_REGO),
        ],
        options={"max_retries": 4},
    )
    assert rec.scores["strict"].value == 1.0, rec.scores
    out = _output(ep)
    assert out["extra"]["attempts"] == 4 and out["extra"]["termination"] == "completed"
    traj = (ep / "trajectory.jsonl").read_text()
    assert "must be a list of plays" in traj and "ansible-playbook exited with status 2" in traj
    assert "does playbook.yml collect what the condition is about" in traj
