"""CISO audit strategies (``itbench scenarios audit --suite ciso``): blind ways to earn a compliance
score without writing the control's policy. Each must score 0 on the strict column everywhere.

A strategy sees what an agent sees — the goal, the workloads of its namespace, the deployed
policies — and returns the policies it leaves in the cluster (:func:`final_policies`). The agents
(``audit-ciso-*``) read that view through the agent's credential and apply the difference; the
tests score the same function's output directly (``personas/ciso/audit.py``).

=====================  ===================================================================
strategy               what it leaves
=====================  ===================================================================
deny-everything        a policy whose rule fails every Pod
match-nothing          a policy that matches only ConfigMaps
name-only              a policy that fails the namespace's workloads by their names
labels-only            a policy that fails them by their labels
new-policy-instead     (updates) the catalogue's rule for the control as a new policy
rename-the-edited      (updates) the right edit, saved under a new name, the original deleted
weaken-the-other       (updates) the right edit, and a rule dropped from the other policies
deny-all-edit          (updates) a fail-every-Pod rule added to the policy that resembles it
=====================  ===================================================================

"The right edit" and "the catalogue's rule" come from the ``ciso-catalogue`` baseline's retrieval
(the goal's text only), so every strategy stays blind to the scenario's reference.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.agent import EventSink
from ...core.output import AgentOutput
from ...core.task import Task
from ...k8s.client import KubeApi, KubeApiError
from ..base import AgentConfig
from ..ciso_catalogue import UPDATE_MARK, best_entry, control_text, rules_for, target_policy

Obj = dict[str, Any]
PODS = {"any": [{"resources": {"kinds": ["Pod"]}}]}
WORKLOAD_KINDS = (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"),
                  ("batch/v1", "Job"), ("batch/v1", "CronJob"), ("v1", "Pod"))  # fmt: skip


@dataclass
class View:
    """What a CISO agent can see: its goal, the workloads of its namespace, the deployed policies."""

    goal: str
    workloads: list[Obj] = field(default_factory=list)
    deployed: list[Obj] = field(default_factory=list)

    @property
    def update(self) -> bool:
        return UPDATE_MARK in self.goal


def _policy(name: str, rules: list[Obj]) -> Obj:
    return {
        "apiVersion": "kyverno.io/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": name},
        "spec": {"validationFailureAction": "Audit", "background": True, "rules": rules},
    }


DENY_ALL_RULE = {"name": "deny-all", "match": PODS, "validate": {"message": "no", "deny": {}}}


def _deny_everything(v: View) -> list[Obj]:
    return [*v.deployed, _policy("audit-deny-everything", [DENY_ALL_RULE])]


def _match_nothing(v: View) -> list[Obj]:
    rule = {
        "name": "configmaps",
        "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
        "validate": {"message": "x", "pattern": {"data": {"k": "v"}}},
    }
    return [*v.deployed, _policy("audit-match-nothing", [rule])]


def _by_metadata(v: View, name: str, field_: str) -> list[Obj]:
    rules = []
    for i, w in enumerate(v.workloads):
        meta = w.get("metadata") or {}
        if field_ == "name":
            pattern: Obj = {"metadata": {"name": f"!{meta.get('name')}*"}}
        else:
            labels = meta.get("labels") or {}
            if not labels:
                continue
            pattern = {"metadata": {"labels": {k: f"!{val}" for k, val in labels.items()}}}
        rules.append({"name": f"r{i}", "match": PODS, "validate": {"message": "x", "pattern": pattern}})
    return [*v.deployed, _policy(name, rules or [DENY_ALL_RULE])]


def _right_rules(v: View) -> list[Obj]:
    control = control_text(v.goal)
    entry = best_entry(control)
    return (rules_for(entry, control) if entry else []) or [DENY_ALL_RULE]


def _edited(v: View, rules: list[Obj]) -> tuple[Obj, list[Obj]]:
    """``rules`` added to the deployed policy that resembles the control's catalogue entry most (the
    first one when no entry matches), and the other deployed policies."""
    entry = best_entry(control_text(v.goal))
    target = copy.deepcopy(target_policy(v.deployed, entry) if entry else v.deployed[0])
    target["spec"]["rules"] = [*target["spec"]["rules"], *rules]
    others = [copy.deepcopy(p) for p in v.deployed if p["metadata"]["name"] != target["metadata"]["name"]]
    return target, others


def _new_policy_instead(v: View) -> list[Obj]:
    return [*v.deployed, _policy("audit-new-policy", _right_rules(v))]


def _rename_the_edited(v: View) -> list[Obj]:
    target, others = _edited(v, _right_rules(v))
    target["metadata"] = {"name": target["metadata"]["name"] + "-v2"}
    return [*others, target]


def _weaken_the_other(v: View) -> list[Obj]:
    target, others = _edited(v, _right_rules(v))
    for p in others:
        p["spec"]["rules"] = p["spec"]["rules"][:-1] or p["spec"]["rules"]
    return [*others, target]


def _deny_all_edit(v: View) -> list[Obj]:
    target, others = _edited(v, [DENY_ALL_RULE])
    return [*others, target]


STRATEGIES: dict[str, tuple[Callable[[View], list[Obj]], bool]] = {
    # name: (what it leaves, whether it applies to new-policy tasks too)
    "deny-everything": (_deny_everything, True),
    "match-nothing": (_match_nothing, True),
    "name-only": (lambda v: _by_metadata(v, "audit-name-only", "name"), True),
    "labels-only": (lambda v: _by_metadata(v, "audit-labels-only", "labels"), True),
    "new-policy-instead": (_new_policy_instead, False),
    "rename-the-edited": (_rename_the_edited, False),
    "weaken-the-other": (_weaken_the_other, False),
    "deny-all-edit": (_deny_all_edit, False),
}


def applies(strategy: str, update: bool) -> bool:
    return update or STRATEGIES[strategy][1]


def final_policies(strategy: str, view: View) -> list[Obj]:
    return STRATEGIES[strategy][0](view)


def _key(p: Obj) -> tuple[str, str, str]:
    meta = p.get("metadata") or {}
    return (str(p.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))


class CisoAuditAgent:
    """Reads the view through the agent's credential and leaves :func:`final_policies` in the cluster."""

    def __init__(self, strategy: str) -> None:
        self.strategy = strategy
        self.name = f"audit-ciso-{strategy}"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        api = KubeApi.from_kubeconfig(task.endpoints.kube_url, task.endpoints.kubeconfig)
        view = View(goal=task.goal, deployed=api.list("kyverno.io/v1", "ClusterPolicy"))
        for ns in task.namespaces:
            for api_version, kind in WORKLOAD_KINDS:
                view.workloads += [w for w in api.list(api_version, kind, ns) if not _owned(w)]
        if not applies(self.strategy, view.update):
            return AgentOutput(extra={"strategy": self.strategy, "skipped": "applies to policy updates only"})
        final = {_key(p): p for p in final_policies(self.strategy, view)}
        before = {_key(p): p for p in view.deployed}
        actions = []
        for key in before.keys() - final.keys():
            api.delete("kyverno.io/v1", key[0], key[1] or None, key[2])
            actions.append(f"deleted {key[0]} {key[2]}")
        for key, p in final.items():
            if key in before and p == before[key]:
                continue
            body = {k: p[k] for k in ("apiVersion", "kind", "metadata", "spec")}
            try:
                if key in before:
                    api.replace(body)
                else:
                    api.create({**body, "metadata": {"name": key[2]}})
                actions.append(f"applied {key[0]} {key[2]}")
            except KubeApiError as e:
                actions.append(f"{key[0]} {key[2]} refused: {e}")
        for a in actions:
            events({"type": "tool_call", "tool": "kubernetes-api", "args": {"action": a}})
        return AgentOutput(mitigation_actions=actions, steps=len(actions), extra={"strategy": self.strategy})


def _owned(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("ownerReferences"))


def make_deny_everything(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("deny-everything")


def make_match_nothing(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("match-nothing")


def make_name_only(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("name-only")


def make_labels_only(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("labels-only")


def make_new_policy_instead(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("new-policy-instead")


def make_rename_the_edited(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("rename-the-edited")


def make_weaken_the_other(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("weaken-the-other")


def make_deny_all_edit(config: AgentConfig) -> CisoAuditAgent:
    return CisoAuditAgent("deny-all-edit")
