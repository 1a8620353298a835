"""Blind answers to ``k8s-opa`` scenarios (``itbench scenarios audit --suite ciso``): each must score
0 on the strict column. A strategy sees only the goal (the control's text, the namespace) and returns
the ``script.sh`` and ``policy.rego`` it leaves.

=========================  ================================================================
strategy                   what it leaves
=========================  ================================================================
rego-always-false          the namespace's workloads fetched; a policy that always says false
rego-always-true           the same fetch; a policy that always says true
rego-nonempty              the same fetch; false whenever anything was fetched
rego-constant-data         the catalogue's policy for the control, on a constant empty list
                           written without asking the cluster
=========================  ================================================================
"""

from __future__ import annotations

from collections.abc import Callable

from ..base import AgentConfig, AgentOutput, EventSink, Task
from ..ciso_catalogue import FETCH, NAMESPACE, best_entry, control_text, rego_answer
from ..rego_answer import leave_rego_answer

ALWAYS = "package check\nimport rego.v1\n\nresult := {value}\n"


def _namespace(goal: str) -> str:
    m = NAMESPACE.search(goal)
    return m.group(1) if m else "default"


def _fetch(goal: str) -> str:
    return "#!/bin/bash\n" + FETCH["workloads"].format(ns=_namespace(goal)) + " > collected_data.json\n"


def _always_false(goal: str) -> tuple[str, str]:
    return _fetch(goal), ALWAYS.format(value="false")


def _always_true(goal: str) -> tuple[str, str]:
    return _fetch(goal), ALWAYS.format(value="true")


def _nonempty(goal: str) -> tuple[str, str]:
    return _fetch(goal), "package check\nimport rego.v1\n\nresult := count(input.items) == 0\n"


def _constant_data(goal: str) -> tuple[str, str]:
    entry = best_entry(control_text(goal))
    answer = rego_answer(entry, _namespace(goal)) if entry else None
    policy = answer[1] if answer else ALWAYS.format(value="false")
    return "#!/bin/bash\necho '{\"items\": []}' > collected_data.json\n", policy


REGO_STRATEGIES: dict[str, Callable[[str], tuple[str, str]]] = {
    "rego-always-false": _always_false,
    "rego-always-true": _always_true,
    "rego-nonempty": _nonempty,
    "rego-constant-data": _constant_data,
}


def rego_answer_of(strategy: str, goal: str) -> tuple[str, str]:
    return REGO_STRATEGIES[strategy](goal)


class RegoAuditAgent:
    def __init__(self, strategy: str) -> None:
        self.strategy = strategy
        self.name = f"audit-ciso-{strategy}"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        if "by OPA Rego policy" not in task.goal:
            return AgentOutput(
                extra={"strategy": self.strategy, "skipped": "applies to k8s-opa scenarios only"}
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
