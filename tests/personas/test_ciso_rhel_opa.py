"""The rhel-opa class (issue 29): the agent's playbook and policy are executed against fresh RHEL
host twins; blind, remediating, constant, never-ending and out-of-inventory answers score 0 strict."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.personas.ciso.host_score import find_playbook_answer, score_playbook
from itbench_agents.personas.ciso.library import ciso_library
from itbench_agents.twin.host.host import host_sandbox_problem

X11 = "ciso/rhel-opa-ssh-x11-forwarding-v1"
SCENARIO = next(s for s in ciso_library() if s.id == X11)
needs_host = pytest.mark.skipif(host_sandbox_problem() is not None, reason=str(host_sandbox_problem()))


def test_missing_or_linked_files_are_named(tmp_path: Path) -> None:
    assert find_playbook_answer(tmp_path) == (None, None, "missing: playbook.yml, policy.rego")
    (tmp_path / "playbook.yml").write_text("- hosts: all\n")
    (tmp_path / "elsewhere.rego").write_text("package check\n")
    (tmp_path / "policy.rego").symlink_to(tmp_path / "elsewhere.rego")
    assert find_playbook_answer(tmp_path)[2] == "policy.rego is a symbolic link"
    assert score_playbook(SCENARIO, None, "package check").required_files_exist is False


def test_the_goal_names_the_inventory_and_the_files() -> None:
    goal = SCENARIO.goal("/w/kubeconfig", "/w", "/w/inventory.ini")
    assert "given a host name `rhel9_servers`" in goal and "`/w/inventory.ini`" in goal
    assert "`playbook.yml`" in goal and "`policy.rego`" in goal and "collected_data.json" in goal
    assert SCENARIO.control in goal


REMEDIATE = """\
- hosts: rhel9_servers
  gather_facts: false
  tasks:
    - ansible.builtin.copy: {content: "X11Forwarding no\\n", dest: /etc/ssh/sshd_config.d/00-fix.conf}
    - ansible.builtin.command: sshd -T
      register: sshd
    - ansible.builtin.copy:
        content: "{{ {'sshd': dict(sshd.stdout_lines | map('split', ' ', 1))} | to_json }}"
        dest: "{{ playbook_dir }}/collected_data.json"
      delegate_to: localhost
"""
CONSTANT = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.copy:
        content: '{"sshd": {"x11forwarding": "no"}}'
        dest: "{{ playbook_dir }}/collected_data.json"
"""
FOREVER = """\
- hosts: rhel9_servers
  gather_facts: false
  tasks:
    - ansible.builtin.command: sleep 600
"""
ELSEWHERE = """\
- hosts: rhel9_servers
  gather_facts: false
  tasks:
    - ansible.builtin.command: sshd -T
      register: sshd
      delegate_to: bastion.example.com
    - ansible.builtin.copy:
        content: "{{ {'sshd': dict(sshd.stdout_lines | map('split', ' ', 1))} | to_json }}"
        dest: "{{ playbook_dir }}/collected_data.json"
      delegate_to: localhost
"""
ALWAYS_FALSE = "package check\nimport rego.v1\nresult := false\n"


@needs_host
@pytest.mark.slow
@pytest.mark.parametrize(
    ("playbook", "policy", "why"),
    [
        (None, ALWAYS_FALSE, "data.check.result = false"),  # the reference playbook, a blind policy
        (REMEDIATE, None, "data.check.result = true"),  # fixes the host instead of assessing it
        (CONSTANT, None, "data.check.result = true"),  # evidence that is not the host's
        (ELSEWHERE, None, "not a host of this scenario's inventory"),
    ],
    ids=["always-false", "remediate", "constant-data", "host-outside-inventory"],
)
def test_blind_answers_score_zero_strict(playbook: str | None, policy: str | None, why: str) -> None:
    score = score_playbook(SCENARIO, playbook or SCENARIO.playbook, policy or SCENARIO.rego)
    assert score.required_files_exist and not score.strict
    assert score.violating is not None and why in score.violating.why + (
        score.compliant.why if score.compliant else ""
    )


@needs_host
@pytest.mark.slow
def test_a_playbook_that_never_ends_is_cut_off() -> None:
    score = score_playbook(SCENARIO, FOREVER, SCENARIO.rego, timeout_s=3)
    assert not score.fetch_generates_data and not score.strict
    assert score.violating is not None and "playbook.yml ran longer than 3 s" in score.violating.why


@needs_host
@pytest.mark.slow
def test_oracle_and_noop_through_itbench_run(tmp_path: Path) -> None:
    args = [
        "run",
        "--suite",
        "ciso",
        "-s",
        X11,
        "-a",
        "oracle",
        "-a",
        "noop",
        "--run-dir",
        str(tmp_path / "run"),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "oracle: compliance (strict) 1/1; noop: compliance (strict) 0/1, errors 0" in res.output
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| oracle | — | — | 100.00 ± n/a | — | 100.00 ± n/a |" in report
    assert "| noop | — | — | 0.00 ± n/a | — | 0.00 ± n/a |" in report


AGENT = r"""#!/bin/sh
# a command agent: writes a playbook and a policy, runs them with the commands the harness gives it
cd "$ITBENCH_WORKDIR"
cat > playbook.yml <<'YML'
- hosts: rhel9_servers
  gather_facts: false
  tasks:
    - {command: sshd -T, register: sshd, changed_when: false}
    - ansible.builtin.copy:
        content: "{{ {'x11': sshd.stdout_lines | select('match', '^x11forwarding ') | first} | to_json }}"
        dest: "{{ playbook_dir }}/collected_data.json"
      delegate_to: localhost
YML
printf 'package check\nimport rego.v1\n\ndefault result := false\n\nresult if input.x11 == "x11forwarding no"\n' > candidate.rego
ansible-playbook -i inventory.ini playbook.yml >&2 || exit 3
# keep the policy only when the tools answered inside the sandbox: the host violates, OPA says false
[ "$(opa eval --data candidate.rego --input collected_data.json data.check.result --format raw)" = false ] || exit 4
mv candidate.rego policy.rego
"""


@needs_host
@pytest.mark.slow
def test_a_command_agent_gets_ansible_playbook_and_opa(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text(AGENT)
    script.chmod(0o755)
    args = [
        "run",
        "--suite",
        "ciso",
        "-s",
        X11,
        "-a",
        "command",
        "--command",
        str(script),
        "--run-dir",
        str(tmp_path / "run"),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "compliance (strict) 1/1, errors 0" in res.output, res.output
