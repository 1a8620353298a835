"""The ciso-react LangGraph graph (the paper's CISO agent, §6.3, as a graph):

    select ─▶ generate ─▶ lint ─▶ deploy ─▶ verify ─▶ report
                 ▲          │        │         │
                 └──────────┴────────┴─────────┘   feedback (not YAML, refused by Kyverno's
                     reflect, up to ``max_retries``   webhook, no failing report) → generate again

``select`` routes by the goal's shape (a policy update names the deployed policies and "The
additional requirement:"; a k8s-opa goal asks to check "by OPA Rego policy"); the paper's task
selector is a model call. ``lint`` is a server-side dry run (``?dryRun=All``): Kyverno's policy
webhook refuses what it cannot run, with its message. ``verify`` waits (on the twin: fast-forwards)
and reads the PolicyReports of the task's namespaces.

For k8s-opa (the paper's NL2Kubectl-fetch and NL2Rego with its ``RunOPARegoTool``) the same loop
handles two files: ``lint`` takes the answer's ```bash and ```rego blocks and checks the policy with
the scenario's OPA (``opa check``: ``$OPA_URL/v1/itbench/check``); ``deploy`` writes ``script.sh``
and ``policy.rego`` and runs the script with the agent's kubeconfig; ``verify`` evaluates
``data.check.result`` on the ``collected_data.json`` it wrote (``opa eval``), which must be a
boolean, and ``false`` — a violation found, as the Kyverno route wants a failing report. For rhel-opa (the
paper's NL2Playbook with its ``RunPlaybookTool``) the answer's ```yaml block is ``playbook.yml``:
``lint`` parses it (a list of plays) and checks the policy, ``deploy`` runs ``ansible-playbook -i
<the task's inventory> playbook.yml`` as the evaluator does (sandboxed), ``verify`` is the same.
Every model call is one step.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ...core.agent import EventSink
from ...core.task import Task
from ...k8s.client import KubeApi, KubeApiError
from ...llm.client import LLMClient
from ...llm.prompts import render
from ...llm.retry import LLMAbort
from ..rego_answer import SCRIPT_TIMEOUT_S, run_playbook_once, run_script

Obj = dict[str, Any]
UPDATE_MARK = "The additional requirement:"
OPA_MARK = "by OPA Rego policy"
RHEL_MARK = "by using Ansible Playbook and OPA Rego policy"
FENCE = re.compile(r"```(?:ya?ml)?\s*\n(.*?)```", re.S)
LANG_FENCE = re.compile(r"```([A-Za-z]*)[ \t]*\n(.*?)```", re.S)
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
    opa: bool = False
    rhel: bool = False
    script: str = ""
    """``script.sh`` (k8s-opa) or ``playbook.yml`` (rhel-opa)."""
    rego: str = ""
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
    rhel = RHEL_MARK in ctx.task.goal and not update
    opa = (OPA_MARK in ctx.task.goal or rhel) and not update
    deployed = [_clean(p) for p in ctx.api.list("kyverno.io/v1", "ClusterPolicy")] if update else []
    kind = "update deployed policies" if update else "new policy"
    if opa:
        kind = "Ansible playbook and Rego policy" if rhel else "kubectl script and Rego policy"
    ctx.events({"type": "agent_message", "content": f"task: {kind}"})
    return {"update": update, "opa": opa, "rhel": rhel, "deployed": deployed}


def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = _ctx(runtime)
    task = ctx.task
    if ctx.llm.calls >= task.limits.max_steps:
        return {"termination": "max_steps", "feedback": "", "policies": []}
    if state.update:
        deployed = yaml.safe_dump_all(state.deployed, sort_keys=False)
        prompt = render("ciso/update.md.j2", goal=task.goal, deployed=deployed, feedback=state.feedback)
    elif state.rhel:
        prompt = render("ciso/rhel_opa.md.j2", goal=task.goal, feedback=state.feedback)
    elif state.opa:
        prompt = render("ciso/k8s_opa.md.j2", goal=task.goal, feedback=state.feedback)
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


def _two_blocks(answer: str, first: tuple[str, ...], first_name: str) -> tuple[str, str, str]:
    """(first block, ```rego block, why): the answer's fenced blocks by language."""
    blocks = {lang.lower(): body for lang, body in LANG_FENCE.findall(answer)}
    body = next((blocks[k] for k in first if blocks.get(k)), "")
    policy = blocks.get("rego") or ""
    missing = [n for n, v in ((first_name, body), ("```rego block (policy.rego)", policy)) if not v]
    if missing:
        return "", "", "the answer has no " + " and no ".join(missing)
    return body, policy, ""


def parse_files(answer: str) -> tuple[str, str, str]:
    """(script, policy, why): the answer's ```bash (or ```sh) and ```rego blocks."""
    script, policy, why = _two_blocks(answer, ("bash", "sh", "shell"), "```bash block (script.sh)")
    if why:
        return "", "", why
    if "--kubeconfig" in script:
        return "", "", "script.sh must not name a kubeconfig (--kubeconfig): it runs with $KUBECONFIG set"
    return script, policy, ""


def parse_playbook_files(answer: str) -> tuple[str, str, str]:
    """(playbook, policy, why): the answer's ```yaml and ```rego blocks; the playbook must be a list
    of plays."""
    playbook, policy, why = _two_blocks(answer, ("yaml", "yml"), "```yaml block (playbook.yml)")
    if why:
        return "", "", why
    try:
        plays = yaml.safe_load(playbook)
    except yaml.YAMLError as e:
        return "", "", f"playbook.yml is not valid YAML: {e}"
    if not isinstance(plays, list) or not all(isinstance(p, dict) and "hosts" in p for p in plays):
        return "", "", "playbook.yml must be a list of plays, each with `hosts`"
    return playbook, policy, ""


def _opa(ctx: Context, path: str, body: dict[str, Any]) -> dict[str, Any]:
    import requests

    url = ctx.task.endpoints.opa_url
    if not url:
        raise RuntimeError("this scenario runs no OPA (no opa_url in the endpoints)")
    r = requests.post(url.rstrip("/") + path, json=body, timeout=SCRIPT_TIMEOUT_S)
    return dict(r.json())


def _errors(errors: list[dict[str, Any]]) -> str:
    out = []
    for e in errors:
        loc = e.get("location") or {}
        where = f"policy.rego:{loc.get('row')}:{loc.get('col')}: " if loc else ""
        out.append(f"{where}{e.get('code')}: {e.get('message')}")
    return "; ".join(out)


def _lint_rego(state: State, ctx: Context) -> dict[str, Any]:
    script, policy, why = (parse_playbook_files if state.rhel else parse_files)(state.answer)
    if why:
        return {"script": "", "rego": "", "feedback": why}
    ctx.events({"type": "tool_call", "tool": "opa", "args": {"command": "opa check policy.rego"}})
    errors = _opa(ctx, "/v1/itbench/check", {"modules": {"policy.rego": policy}}).get("errors") or []
    if errors:
        return {"script": "", "rego": "", "feedback": f"opa check policy.rego: {_errors(errors)}"}
    return {"script": script, "rego": policy, "feedback": ""}


def _deploy_playbook(state: State, ctx: Context) -> dict[str, Any]:
    work = Path(ctx.task.workdir)
    (work / "playbook.yml").write_text(state.script)
    (work / "policy.rego").write_text(state.rego)
    (work / "collected_data.json").unlink(missing_ok=True)
    rc, tail = run_playbook_once(ctx.task, ctx.events)
    if rc is None:
        return {"feedback": "playbook.yml ran out of time"}
    log = [*state.log, f"wrote playbook.yml and policy.rego; ran playbook.yml: exit {rc}"]
    if rc != 0:
        return {"log": log, "feedback": f"ansible-playbook exited with status {rc}:\n{tail[-1500:]}"}
    return {"log": log, "feedback": ""}


def _deploy_rego(state: State, ctx: Context) -> dict[str, Any]:
    if state.rhel:
        return _deploy_playbook(state, ctx)
    work = Path(ctx.task.workdir)
    (work / "script.sh").write_text(state.script)
    (work / "policy.rego").write_text(state.rego)
    (work / "collected_data.json").unlink(missing_ok=True)
    rc, stderr = run_script(ctx.task, ctx.events, SCRIPT_TIMEOUT_S)
    if rc is None:
        return {"feedback": f"script.sh ran longer than {SCRIPT_TIMEOUT_S:g} s"}
    log = [*state.log, f"wrote script.sh and policy.rego; ran script.sh: exit {rc}"]
    if rc != 0:
        return {"log": log, "feedback": f"script.sh exited with status {rc}: {stderr}"}
    return {"log": log, "feedback": ""}


def _verify_rego(state: State, ctx: Context) -> dict[str, Any]:
    import json

    data = Path(ctx.task.workdir) / "collected_data.json"
    collector = "playbook.yml" if state.rhel else "script.sh"
    try:
        evidence = json.loads(data.read_text())
    except (OSError, ValueError) as e:
        return {"ok": False, "feedback": f"{collector} did not write JSON to collected_data.json ({e})"}
    ctx.events({"type": "tool_call", "tool": "opa", "args": {"command": "opa eval ... data.check.result"}})
    reply = _opa(ctx, "/v1/itbench/eval", {"modules": {"policy.rego": state.rego}, "input": evidence,
                                            "query": "data.check.result"})  # fmt: skip
    if reply.get("errors"):
        return {"ok": False, "feedback": f"opa eval: {_errors(reply['errors'])}"}
    rows = reply.get("result") or []
    value = rows[0]["expressions"][0]["value"] if rows else None
    ctx.events({"type": "observation", "tool": "opa", "content": f"data.check.result = {json.dumps(value)}"})
    if value is False:
        return {"ok": True, "feedback": ""}
    if value is True:
        return {"ok": False, "feedback": "data.check.result is true on the collected data: the policy finds no "
                f"violation (does {collector} collect what the condition is about, and does the policy "
                "check the condition?)"}  # fmt: skip
    return {"ok": False, "feedback": f"data.check.result is {json.dumps(value) if rows else 'undefined'}, "
            "not a boolean (use `default result := false`)"}  # fmt: skip


def lint(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = _ctx(runtime)
    if state.opa:
        return _lint_rego(state, ctx)
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
    if state.opa:
        return _deploy_rego(state, ctx)
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
    task's namespaces (k8s-opa: the policy says false on the collected data)."""
    ctx = _ctx(runtime)
    if state.opa:
        return _verify_rego(state, ctx)
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
