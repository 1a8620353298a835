"""The ``oracle`` agent: applies the scenario's reference mitigation and reports its ground truth.

It gets the scenario through a privileged side channel (:meth:`OracleAgent.prime`, called by the
harness) — for validating scenarios and the harness only; its numbers are an upper bound, not a
result. Mitigation goes through the Kubernetes API like any agent's would.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.agent import EventSink
from ..core.output import AgentOutput, Diagnosis, DiagnosisEntity, Propagation, write_agent_output
from ..core.task import Task
from ..k8s.client import KubeApi
from ..scenario.inject import apply_operations
from ..scenario.kinds import matching_names
from ..scenario.spec import Group, Scenario
from .base import AgentConfig


def entity_name(group: Group, api: KubeApi | None = None) -> str:
    """A concrete ``namespace/Kind/name`` for a ground-truth group (looks up filter-only groups)."""
    name = group.name
    if not name and api is not None:
        live = matching_names(api, group)
        if live:
            name = live[0]
    name = name or (group.filter[0] if group.filter else group.id)
    return f"{group.namespace}/{group.kind}/{name}" if group.namespace else f"{group.kind}/{name}"


_KIND_PREFERENCE = ["Deployment", "StatefulSet", "Service", "ConfigMap"]


def ground_truth_diagnosis(scenario: Scenario, api: KubeApi | None = None) -> Diagnosis:
    """The ground truth as an agent would report it: one entity per alias class (a named object
    preferred over a pod-name filter), root causes marked, the propagation chain between them."""
    from ..evaluation.entities import AliasIndex

    gt = scenario.ground_truth
    aliases = AliasIndex(gt)
    classes: dict[str, list[Group]] = {}
    for g in gt.groups:
        classes.setdefault(aliases.cls(g.id), []).append(g)

    def rank(g: Group) -> tuple[int, int]:
        pref = _KIND_PREFERENCE.index(g.kind) if g.kind in _KIND_PREFERENCE else len(_KIND_PREFERENCE)
        return (0 if g.name else 1, pref)

    on_chain = {aliases.cls(g.id) for g in gt.root_causes()}
    for p in gt.propagations:
        on_chain |= {aliases.cls(p.source), aliases.cls(p.target)}
    classes = {c: gs for c, gs in classes.items() if c in on_chain}  # bystander groups are not named
    best = {c: sorted(gs, key=rank)[0] for c, gs in classes.items()}
    rep = {c: entity_name(g, api) for c, g in best.items()}
    conditions = {aliases.cls(f.entity.group_id): f.condition for f in gt.fault}
    entities = [
        DiagnosisEntity(
            name=rep[c],
            key=best[c].key,
            contributing_factor=any(g.root_cause for g in gs),
            reasoning=conditions.get(c, ""),
            evidence="ground truth",
        )
        for c, gs in classes.items()
    ]
    props = [
        Propagation(
            source=rep[aliases.cls(p.source)],
            target=rep[aliases.cls(p.target)],
            condition=p.condition,
            effect=p.effect,
        )
        for p in gt.propagations
    ]
    return Diagnosis(entities=entities, propagations=props)


class OracleAgent:
    name = "oracle"

    def __init__(self) -> None:
        self._scenario: Scenario | None = None
        self._now: Callable[[], _dt.datetime] | None = None
        self._truth: list[dict[str, str]] | None = None
        """FinOps anomaly scenarios: the resources the anomaly comes from."""

    def prime(self, context: dict[str, Any]) -> None:
        """The privileged side channel: the harness hands over the scenario."""
        self._scenario = context["scenario"]
        self._now = context.get("now")
        self._truth = context.get("truth")

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        if self._scenario is None:
            raise RuntimeError("the oracle agent needs the harness' privileged context (prime) first")
        if task.kind == "anomaly":  # FinOps: the true resources, in the answer file
            return leave_anomaly_answer(self._truth or [], task, events)
        if not isinstance(self._scenario, Scenario):
            return deploy_reference_policies(self._scenario, task, events)
        start = time.perf_counter()
        api = KubeApi.from_kubeconfig(task.endpoints.kube_url, task.endpoints.kubeconfig)
        diagnosis = ground_truth_diagnosis(self._scenario, api)
        diag_t = time.perf_counter() - start
        events({"type": "agent_message", "content": "oracle: diagnosis from ground truth"})
        actions = []
        for op in self._scenario.mitigation:
            events({"type": "tool_call", "tool": "kubernetes-api", "args": op.model_dump(mode="json")})
            actions.extend(apply_operations(api, [op], self._now))
            events({"type": "observation", "tool": "kubernetes-api", "content": actions[-1]})
        out = AgentOutput(
            diagnosis=diagnosis,
            mitigation_actions=actions,
            steps=len(actions) + 1,
            diagnosis_time_s=diag_t,
        )
        write_agent_output(task.workdir, out)
        return out


def leave_anomaly_answer(truth: list[dict[str, str]], task: Task, events: EventSink) -> AgentOutput:
    """A FinOps anomaly scenario: ``answer.json`` naming the true resources."""
    import json

    answer = {"resource": [{"name": t["name"], "type": t["type"]} for t in truth]}
    (Path(task.workdir) / "answer.json").write_text(json.dumps(answer, indent=2) + "\n")
    events({"type": "agent_message", "content": f"oracle: {json.dumps(answer)}"})
    return AgentOutput(steps=1, extra={"answer": answer})


def deploy_reference_policies(scenario: Any, task: Task, events: EventSink) -> AgentOutput:
    """A CISO scenario: create (or, for ``kyverno-update``, replace) the reference policies with the
    agent's own credential, as an agent would, and leave them in ``policy.yaml``."""
    import yaml

    from ..k8s.client import KubeApiError

    if scenario.task_class == "rhel-opa":  # the reference playbook and policy, run as an agent would
        from .rego_answer import leave_playbook_answer

        return leave_playbook_answer(task, scenario.playbook, scenario.rego, events)
    if scenario.task_class == "k8s-opa":  # the reference files, written and run as an agent would
        from .rego_answer import leave_rego_answer

        return leave_rego_answer(task, scenario.fetcher, scenario.rego, events)
    api = KubeApi.from_kubeconfig(task.endpoints.kube_url, task.endpoints.kubeconfig)
    actions = []
    for doc in scenario.final_reference():
        meta = doc.get("metadata") or {}
        events(
            {
                "type": "tool_call",
                "tool": "kubernetes-api",
                "args": {"apply": f"{doc['kind']}/{meta['name']}"},
            }
        )
        try:
            api.create(doc)
            actions.append(f"created {doc['kind']} {meta['name']}")
        except KubeApiError as e:
            if e.code != 409:
                raise
            api.replace(doc)
            actions.append(f"replaced {doc['kind']} {meta['name']}")
        events({"type": "observation", "tool": "kubernetes-api", "content": actions[-1]})
    (Path(task.workdir) / "policy.yaml").write_text(
        yaml.safe_dump_all(scenario.final_reference(), sort_keys=False)
    )
    return AgentOutput(mitigation_actions=actions, steps=len(actions))


def make_agent(config: AgentConfig) -> OracleAgent:
    return OracleAgent()
