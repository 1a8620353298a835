"""The ciso-react LangGraph graph (the paper's CISO agent, §6.3, as a graph):

    select ─▶ generate ─▶ lint ─▶ deploy ─▶ verify ─▶ report
                 ▲          │        │         │
                 └──────────┴────────┴─────────┘   feedback (not YAML, refused by Kyverno's
                     reflect, up to ``max_retries``   webhook, no failing report) → generate again

``select`` routes by the goal's shape (a policy update names the deployed policies and "The
additional requirement:"); the paper's task selector is a model call. ``lint`` is a server-side dry
run (``?dryRun=All``): Kyverno's policy webhook refuses what it cannot run, with its message.
``verify`` waits (on the twin: fast-forwards) and reads the PolicyReports of the task's namespaces.
Every model call is one step.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from typing import Any

import yaml
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ...llm.client import LLMClient
from ...llm.prompts import render
from ...llm.retry import LLMAbort
from ...scenario.kubeapi import KubeApi, KubeApiError
from ..base import EventSink, Task

Obj = dict[str, Any]
UPDATE_MARK = "The additional requirement:"
FENCE = re.compile(r"```(?:ya?ml)?\s*\n(.*?)```", re.S)
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")
WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet")
REPORT_WAIT_S = 30.0
"""Seconds to wait for Kyverno's background scan before reading the reports."""


@dataclass
class Context:
    task: Task
    llm: LLMClient
    api: KubeApi
    events: EventSink
    max_retries: int = 3


@dataclass
class State:
    update: bool = False
    deployed: list[Obj] = field(default_factory=list)
    attempt: int = 0
    answer: str = ""
    policies: list[Obj] = field(default_factory=list)
    feedback: str = ""
    ok: bool = False
    termination: str = "completed"
    log: list[str] = field(default_factory=list)


def _ctx(runtime: Runtime[Context]) -> Context:
    return runtime.context


def _clean(policy: Obj) -> Obj:
    out: Obj = {
        k: copy.deepcopy(policy[k]) for k in ("apiVersion", "kind", "metadata", "spec") if k in policy
    }
    meta = out.get("metadata") or {}
    for k in SERVER_FIELDS:
        meta.pop(k, None)
    (meta.get("annotations") or {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return out


# ---------------------------------------------------------------------------- nodes
def select(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = _ctx(runtime)
    update = UPDATE_MARK in ctx.task.goal
    deployed = [_clean(p) for p in ctx.api.list("kyverno.io/v1", "ClusterPolicy")] if update else []
    ctx.events(
        {
            "type": "agent_message",
            "content": f"task: {'update deployed policies' if update else 'new policy'}",
        }
    )
    return {"update": update, "deployed": deployed}


def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = _ctx(runtime)
    task = ctx.task
    if ctx.llm.calls >= task.limits.max_steps:
        return {"termination": "max_steps", "feedback": "", "policies": []}
    if state.update:
        deployed = yaml.safe_dump_all(state.deployed, sort_keys=False)
        prompt = render("ciso/update.md.j2", goal=task.goal, deployed=deployed, feedback=state.feedback)
    else:
        prompt = render("ciso/kyverno.md.j2", goal=task.goal, feedback=state.feedback)
    ctx.llm.step = ctx.llm.calls + 1
    try:
        answer = ctx.llm.complete(render("ciso/system.md.j2"), [{"role": "user", "content": prompt}])
    except LLMAbort as e:
        return {"termination": e.reason, "policies": [], "feedback": ""}
    return {"answer": answer, "attempt": state.attempt + 1}


def parse_policies(answer: str) -> tuple[list[Obj], str]:
    """The Kyverno policies of an answer (its fenced YAML, or the whole answer), or why there are none."""
    blocks = FENCE.findall(answer) or [answer]
    try:
        docs = [d for b in blocks for d in yaml.safe_load_all(b) if d is not None]
    except yaml.YAMLError as e:
        return [], f"the answer is not valid YAML: {e}"
    policies = [d for d in docs if isinstance(d, dict) and d.get("kind") in ("ClusterPolicy", "Policy")]
    if not policies:
        return [], "the answer holds no Kyverno ClusterPolicy or Policy document"
    bad = [p for p in policies if not str(p.get("apiVersion", "")).startswith("kyverno.io/")]
    if bad or any(not (p.get("metadata") or {}).get("name") for p in policies):
        return [], "every policy needs apiVersion kyverno.io/v1 and metadata.name"
    return [_clean(p) for p in policies], ""


def lint(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = _ctx(runtime)
    policies, why = parse_policies(state.answer)
    if why:
        return {"policies": [], "feedback": why}
    for p in policies:
        try:
            _apply(ctx.api, p, dry_run=True)
        except KubeApiError as e:
            return {
                "policies": [],
                "feedback": f"the cluster refused {p['kind']} {p['metadata']['name']}: {e}",
            }
    return {"policies": policies, "feedback": ""}


def _apply(api: KubeApi, policy: Obj, *, dry_run: bool = False) -> str:
    meta = policy["metadata"]
    try:
        current = api.get(policy["apiVersion"], policy["kind"], meta.get("namespace"), meta["name"])
    except KubeApiError as e:
        if e.code != 404:
            raise
        api.create(policy, dry_run=dry_run)
        return f"created {policy['kind']} {meta['name']}"
    body = {**policy, "metadata": {**meta, "resourceVersion": current["metadata"].get("resourceVersion")}}
    api.replace(body, dry_run=dry_run)
    return f"updated {policy['kind']} {meta['name']}"


def deploy(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = _ctx(runtime)
    log = list(state.log)
    for p in state.policies:
        try:
            log.append(_apply(ctx.api, p))
        except KubeApiError as e:
            return {"feedback": f"deploying {p['kind']} {p['metadata']['name']} failed: {e}", "log": log}
        ctx.events({"type": "observation", "tool": "kubernetes-api", "content": log[-1]})
    return {"log": log, "feedback": ""}


def _wait(ctx: Context, seconds: float) -> None:
    if ctx.task.on_twin:  # fast-forward the twin's clock with the agent's token, as the `wait` tool does
        ctx.api.post("/itbench/v1/advance", {"seconds": seconds})
    else:
        time.sleep(seconds)


def verify(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Some result of the deployed policies fails for a workload (a Pod or a Pod controller) of the
    task's namespaces."""
    ctx = _ctx(runtime)
    _wait(ctx, REPORT_WAIT_S)
    names = {p["metadata"]["name"] for p in state.policies}
    failing: list[str] = []
    seen = 0
    for ns in ctx.task.namespaces:
        for report in ctx.api.list("wgpolicyk8s.io/v1alpha2", "PolicyReport", ns):
            if (report.get("scope") or {}).get("kind") not in WORKLOAD_KINDS:
                continue
            for r in report.get("results") or []:
                if r.get("policy") in names:
                    seen += 1
                    if r.get("result") == "fail":
                        scope = report.get("scope") or {}
                        failing.append(f"{scope.get('kind')}/{scope.get('name')}: {r.get('message', '')}")
    ctx.events(
        {"type": "observation", "tool": "policyreports", "content": "\n".join(failing) or "no failure"}
    )
    if failing:
        return {"ok": True, "feedback": ""}
    why = (
        "the policy reports no failure for the workloads of the namespace"
        if seen
        else "no report mentions the policy for the workloads of the namespace (does it match them?)"
    )
    return {"ok": False, "feedback": why}


def report(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    return {}


# ---------------------------------------------------------------------------- routing
def _after_generate(state: State) -> str:
    return "report" if state.termination != "completed" else "lint"


def _retry_or(state: State, runtime: Runtime[Context], nxt: str) -> str:
    if not state.feedback:
        return nxt
    return "generate" if state.attempt <= _ctx(runtime).max_retries else "report"


def _after_lint(state: State, runtime: Runtime[Context]) -> str:
    return _retry_or(state, runtime, "deploy")


def _after_deploy(state: State, runtime: Runtime[Context]) -> str:
    return _retry_or(state, runtime, "verify")


def _after_verify(state: State, runtime: Runtime[Context]) -> str:
    return _retry_or(state, runtime, "report")


def build() -> Any:
    g = StateGraph(State, context_schema=Context)
    for name, fn in (
        ("select", select),
        ("generate", generate),
        ("lint", lint),
        ("deploy", deploy),
        ("verify", verify),
        ("report", report),
    ):
        g.add_node(name, fn)  # type: ignore[call-overload]
    g.add_edge(START, "select")
    g.add_edge("select", "generate")
    g.add_conditional_edges("generate", _after_generate, ["lint", "report"])
    g.add_conditional_edges("lint", _after_lint, ["deploy", "generate", "report"])
    g.add_conditional_edges("deploy", _after_deploy, ["verify", "generate", "report"])
    g.add_conditional_edges("verify", _after_verify, ["generate", "report"])
    g.add_edge("report", END)
    return g.compile()


graph = build()
