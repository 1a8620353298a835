"""ciso-catalogue: a non-LLM CISO baseline — what retrieval alone scores.

    goal ──▶ the control's text ──▶ the catalogue entry whose keywords it holds most (``catalogue.yaml``,
    CIS Kubernetes §5 → Kyverno rules on Pods) ──▶ a new ClusterPolicy of those rules (``kyverno``)
    or those rules added to the deployed policy that resembles them most (``kyverno-update``), or
    (``k8s-opa``) a kubectl ``script.sh`` for the goal's namespace and a ``policy.rego`` of the entry's
    Rego rules (``rego.yaml``), run once to leave ``collected_data.json``; or (``rhel-opa``) the
    entry of ``rhel.yaml`` (CIS RHEL 9 → what to collect, what decides) as a ``playbook.yml`` and a
    ``policy.rego`` (``rhel.py``), the playbook run once against the task's inventory

It reads only the goal and the cluster, through the agent's credential; it never sees the scenario.
The policy it deployed is also left in ``policy.yaml`` in the work folder.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ...core.agent import EventSink
from ...core.output import AgentOutput
from ...core.task import Task
from ...k8s.client import KubeApi, KubeApiError
from ..base import AgentConfig
from ..rego_answer import leave_rego_answer
from .wording import holds, words

Obj = dict[str, Any]
HOST = re.compile(r"\b([a-z0-9-]+(?:\.[a-z0-9-]+)+\.[a-z]{2,}|[a-z0-9-]+\.(?:com|io|org|net|dev|local))\b")
UPDATE_MARK = "The additional requirement:"
OPA_MARK = "by OPA Rego policy"
RHEL_MARK = "by using Ansible Playbook and OPA Rego policy"
NAMESPACE = re.compile(r"namespace `([a-z0-9][a-z0-9-]*)`")
FETCH = {
    "workloads": "kubectl get pods,deployments,statefulsets,daemonsets,jobs,cronjobs -n {ns} -o json",
    "networkpolicies": "kubectl get networkpolicies -n {ns} -o json",
}
REGO_PRELUDE = """package check
import rego.v1

workload_kinds := {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}

pod_specs contains o.spec if {
  some o in input.items
  o.kind == "Pod"
}

pod_specs contains o.spec.template.spec if {
  some o in input.items
  o.kind in workload_kinds
}

pod_specs contains o.spec.jobTemplate.spec.template.spec if {
  some o in input.items
  o.kind == "CronJob"
}

containers contains c if {
  some s in pod_specs
  some c in array.concat(object.get(s, "containers", []), object.get(s, "initContainers", []))
}
"""
REGO_TAIL = """
default result := false

result if count(violations) == 0
"""


@dataclass(frozen=True)
class Entry:
    cis: str
    name: str
    title: str
    keywords: tuple[str, ...]
    rules: tuple[Obj, ...]


@cache
def catalogue() -> tuple[Entry, ...]:
    text = resources.files(__package__).joinpath("catalogue.yaml").read_text()
    return tuple(
        Entry(e["cis"], e["name"], e["title"], tuple(e["keywords"]), tuple(e["rules"]))
        for e in yaml.safe_load(text)
    )


@cache
def rego_catalogue() -> dict[str, dict[str, str]]:
    """CIS id → ``fetch`` (a key of :data:`FETCH`) and ``violations`` (Rego rules)."""
    return dict(yaml.safe_load(resources.files(__package__).joinpath("rego.yaml").read_text()))


def rego_answer(entry: Entry, namespace: str) -> tuple[str, str] | None:
    """(script.sh, policy.rego) for an entry, or None when the catalogue has no Rego for it."""
    spec = rego_catalogue().get(entry.cis)
    if spec is None:
        return None
    script = "#!/bin/bash\n" + FETCH[spec["fetch"]].format(ns=namespace) + " > collected_data.json\n"
    return script, REGO_PRELUDE + "\n" + spec["violations"] + REGO_TAIL


def control_text(goal: str) -> str:
    """The control's sentence of a goal: after "The additional requirement:" in an update goal, the
    first indented line of a new-policy goal; the whole goal when neither is found."""
    if UPDATE_MARK in goal:
        rest = goal.split(UPDATE_MARK, 1)[1].strip()
        return rest.split("\n", 1)[0]
    indented = [line.strip() for line in goal.splitlines() if line.startswith("    ") and line.strip()]
    return indented[0] if indented else goal


def best_entry(control: str) -> Entry | None:
    """The entry with the most keyword phrases in ``control`` (ties: the longer phrases); None when
    no phrase is found."""
    said = words(control)
    scored = []
    for e in catalogue():
        found = [k for k in e.keywords if holds(said, k)]
        if found:
            scored.append((len(found), sum(len(words(k)) for k in found), e))
    if not scored:
        return None
    return max(scored, key=lambda s: (s[0], s[1]))[2]


def rules_for(entry: Entry, control: str) -> list[Obj]:
    registry = HOST.search(control.lower())
    rules = copy.deepcopy(list(entry.rules))
    if any("{registry}" in yaml.safe_dump(r) for r in rules):
        if registry is None:
            return []
        rules = yaml.safe_load(yaml.safe_dump(rules).replace("{registry}", registry.group(1)))
    return rules


COMMON = frozenset({
    "a", "an", "and", "any", "are", "as", "be", "by", "for", "from", "in", "is", "it", "kind", "match",
    "message", "must", "name", "no", "not", "of", "on", "or", "pattern", "pod", "request", "resource",
    "rule", "spec", "the", "to", "validate", "with", "all", "allowed", "object",
})  # fmt: skip


def _content(obj: Any) -> set[str]:
    """The words of a policy or rules, their field names included (``securityContext``,
    ``containers``...), without the words every Kyverno rule has."""
    return set(words(yaml.safe_dump(obj))) - {w[:-1] if w.endswith("s") else w for w in COMMON} - COMMON


SECTIONS = {
    "5.1": "RBAC and service accounts",
    "5.2": "pod security standards",
    "5.3": "network policies and CNI",
    "5.4": "secrets management",
    "5.5": "extensible admission control",
    "5.7": "general policies",
}
"""CIS Kubernetes Benchmark §5's sections: part of what an entry is about."""


def _similarity(policy: Obj, entry: Entry) -> int:
    """How many words the deployed policy's name and rules (names, messages, the fields they check)
    share with the entry's (its CIS section's title included)."""
    theirs = _content({"name": policy["metadata"]["name"], "rules": (policy.get("spec") or {}).get("rules")})
    section = SECTIONS.get(entry.cis.rsplit(".", 1)[0], "")
    ours = _content(
        {"name": entry.name, "title": entry.title, "section": section, "rules": list(entry.rules)}
    )
    return len(theirs & ours)


def target_policy(deployed: list[Obj], entry: Entry) -> Obj:
    """The deployed policy whose rules share the most words with the entry's (on a tie, the first by
    name, whatever order the cluster listed them in)."""
    by_name = sorted(deployed, key=lambda p: str(p["metadata"]["name"]))
    return max(by_name, key=lambda p: _similarity(p, entry))


class CisoCatalogueAgent:
    name = "ciso-catalogue"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        control = control_text(task.goal)
        if RHEL_MARK in task.goal:
            return self._rhel_opa(task, control, events)
        api = KubeApi.from_kubeconfig(task.endpoints.kube_url, task.endpoints.kubeconfig)
        entry = best_entry(control)
        events(
            {
                "type": "agent_message",
                "content": f"control: {control!r} → {entry.cis if entry else 'no entry'}",
            }
        )
        rules = rules_for(entry, control) if entry else []
        if entry is not None and OPA_MARK in task.goal:
            return self._k8s_opa(task, entry, events)
        if entry is None or not rules:
            return AgentOutput(extra={"cis": None, "reason": "no catalogue entry matches the control"})
        if UPDATE_MARK in task.goal:
            policy, action = self._update(api, entry, rules, events)
        else:
            policy = {
                "apiVersion": "kyverno.io/v1",
                "kind": "ClusterPolicy",
                "metadata": {"name": entry.name, "annotations": {"policies.kyverno.io/title": entry.title}},
                "spec": {"validationFailureAction": "Audit", "background": True, "rules": rules},
            }
            action = self._apply(api, policy, events)
        if policy is None:
            return AgentOutput(extra={"cis": entry.cis, "reason": action})
        Path(task.workdir, "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
        return AgentOutput(
            mitigation_actions=[action],
            steps=2,
            extra={"cis": entry.cis, "policy": policy["metadata"]["name"]},
        )

    def _rhel_opa(self, task: Task, control: str, events: EventSink) -> AgentOutput:
        from ..rego_answer import leave_playbook_answer
        from .rhel import best_rhel_entry, rhel_answer

        entry = best_rhel_entry(control)
        events(
            {
                "type": "agent_message",
                "content": f"control: {control!r} → {entry['cis'] if entry else 'no entry'}",
            }
        )
        if entry is None:
            return AgentOutput(extra={"cis": None, "reason": "no RHEL catalogue entry matches the control"})
        return leave_playbook_answer(task, *rhel_answer(entry), events, cis=entry["cis"])

    def _k8s_opa(self, task: Task, entry: Entry, events: EventSink) -> AgentOutput:
        m = NAMESPACE.search(task.goal)
        answer = rego_answer(entry, m.group(1) if m else "default")
        if answer is None:
            return AgentOutput(
                extra={"cis": entry.cis, "reason": "the catalogue has no Rego for this control"}
            )
        return leave_rego_answer(task, *answer, events, cis=entry.cis)

    def _update(
        self, api: KubeApi, entry: Entry, rules: list[Obj], events: EventSink
    ) -> tuple[Obj | None, str]:
        events({"type": "tool_call", "tool": "kubernetes-api", "args": {"list": "ClusterPolicy"}})
        deployed = api.list("kyverno.io/v1", "ClusterPolicy")
        if not deployed:
            return None, "no deployed ClusterPolicy to update"
        target = target_policy(deployed, entry)
        spec = target.setdefault("spec", {})
        taken = {r.get("name") for r in spec.get("rules") or []}
        for r in rules:
            while r["name"] in taken:
                r["name"] += "-cis"
        spec["rules"] = [*(spec.get("rules") or []), *rules]
        target.pop("status", None)
        return target, self._apply(api, target, events)

    def _apply(self, api: KubeApi, policy: Obj, events: EventSink) -> str:
        name = policy["metadata"]["name"]
        events({"type": "tool_call", "tool": "kubernetes-api", "args": {"apply": f"ClusterPolicy/{name}"}})
        try:
            if policy["metadata"].get("resourceVersion"):
                api.replace(policy)
                action = f"updated ClusterPolicy {name}"
            else:
                api.create(policy)
                action = f"created ClusterPolicy {name}"
        except KubeApiError as e:
            action = f"ClusterPolicy {name} refused: {e}"
        events({"type": "observation", "tool": "kubernetes-api", "content": action})
        return action


def make_agent(config: AgentConfig) -> CisoCatalogueAgent:
    return CisoCatalogueAgent()
