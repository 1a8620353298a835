"""Blind answers to ``k8s-opa`` and ``rhel-opa`` scenarios (``itbench scenarios audit --suite ciso``):
each must score 0 on the strict column. A strategy sees only the goal (the control's text, the
namespace) and returns the ``script.sh`` — on RHEL the ``playbook.yml`` — and the ``policy.rego`` it
leaves. On RHEL "fetched" means the catalogue's playbook for the control (or ``sshd -T`` when the
catalogue has none) and the constant file is ``{}`` written on the controller.

=========================  ================================================================
strategy                   what it leaves
=========================  ================================================================
rego-always-false          the namespace's workloads fetched; a policy that always says false
rego-always-true           the same fetch; a policy that always says true
rego-nonempty              the same fetch; false whenever anything was fetched
rego-constant-data         the catalogue's policy for the control, on a constant empty list
                           written without asking the cluster
rhel-remediate             (rhel-opa only) the catalogue's playbook and policy, the playbook
                           first making the host comply (remediation instead of assessment)
=========================  ================================================================
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.agent import EventSink
from ...core.output import AgentOutput
from ...core.task import Task
from ..base import AgentConfig
from ..ciso_catalogue import FETCH, NAMESPACE, RHEL_MARK, best_entry, control_text, rego_answer
from ..ciso_catalogue.rhel import HEAD, SAVE, best_rhel_entry, remediating_answer, rhel_answer
from ..rego_answer import leave_playbook_answer, leave_rego_answer

ALWAYS = "package check\nimport rego.v1\n\nresult := {value}\n"


def _namespace(goal: str) -> str:
    m = NAMESPACE.search(goal)
    return m.group(1) if m else "default"


def _fetch(goal: str) -> str:
    if RHEL_MARK in goal:
        entry = best_rhel_entry(control_text(goal))
        if entry is not None:
            return rhel_answer(entry)[0]
        task = "    - {command: sshd -T, register: sshd, changed_when: false}\n"
        return HEAD.format(cis="?") + task + SAVE.format(content="{'sshd': sshd.stdout_lines}")
    return "#!/bin/bash\n" + FETCH["workloads"].format(ns=_namespace(goal)) + " > collected_data.json\n"


def _always_false(goal: str) -> tuple[str, str]:
    return _fetch(goal), ALWAYS.format(value="false")


def _always_true(goal: str) -> tuple[str, str]:
    return _fetch(goal), ALWAYS.format(value="true")


def _nonempty(goal: str) -> tuple[str, str]:
    if RHEL_MARK in goal:
        return _fetch(goal), "package check\nimport rego.v1\n\nresult := count(input) == 0\n"
    return _fetch(goal), "package check\nimport rego.v1\n\nresult := count(input.items) == 0\n"


CONSTANT_PLAYBOOK = """- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.copy: {content: "{}", dest: "{{ playbook_dir }}/collected_data.json"}
"""


def _constant_data(goal: str) -> tuple[str, str]:
    if RHEL_MARK in goal:
        rhel = best_rhel_entry(control_text(goal))
        return CONSTANT_PLAYBOOK, rhel_answer(rhel)[1] if rhel else ALWAYS.format(value="false")
    entry = best_entry(control_text(goal))
    answer = rego_answer(entry, _namespace(goal)) if entry else None
    policy = answer[1] if answer else ALWAYS.format(value="false")
    return "#!/bin/bash\necho '{\"items\": []}' > collected_data.json\n", policy


def _remediate(goal: str) -> tuple[str, str]:
    entry = best_rhel_entry(control_text(goal))
    if entry is None:
        return _fetch(goal), ALWAYS.format(value="false")
    return remediating_answer(entry)


REGO_STRATEGIES: dict[str, Callable[[str], tuple[str, str]]] = {
    "rego-always-false": _always_false,
    "rego-always-true": _always_true,
    "rego-nonempty": _nonempty,
    "rego-constant-data": _constant_data,
    "rhel-remediate": _remediate,
}
RHEL_ONLY = frozenset({"rhel-remediate"})
"""Strategies that answer rhel-opa goals only."""


def rego_answer_of(strategy: str, goal: str) -> tuple[str, str]:
    return REGO_STRATEGIES[strategy](goal)


class RegoAuditAgent:
    def __init__(self, strategy: str) -> None:
        self.strategy = strategy
        self.name = f"audit-ciso-{strategy}"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        if RHEL_MARK in task.goal:
            return leave_playbook_answer(
                task, *rego_answer_of(self.strategy, task.goal), events, strategy=self.strategy
            )
        if "by OPA Rego policy" not in task.goal or self.strategy in RHEL_ONLY:
            return AgentOutput(
                extra={"strategy": self.strategy, "skipped": "applies to the OPA classes only"}
            )
        return leave_rego_answer(
            task, *rego_answer_of(self.strategy, task.goal), events, strategy=self.strategy
        )


def make_rego_always_false(config: AgentConfig) -> RegoAuditAgent:
    return RegoAuditAgent("rego-always-false")


def make_rego_always_true(config: AgentConfig) -> RegoAuditAgent:
    return RegoAuditAgent("rego-always-true")


def make_rego_nonempty(config: AgentConfig) -> RegoAuditAgent:
    return RegoAuditAgent("rego-nonempty")


def make_rego_constant_data(config: AgentConfig) -> RegoAuditAgent:
    return RegoAuditAgent("rego-constant-data")


def make_rhel_remediate(config: AgentConfig) -> RegoAuditAgent:
    return RegoAuditAgent("rhel-remediate")
