"""Agent registry: a name → ``"module:factory"`` string, imported only when used.

Every factory has the signature ``factory(config: AgentConfig) -> Agent``. Third parties add
agents by name from an installed package's ``itbench_agents.agents`` entry points (see
``itbench_agents/plugins.py``), pass ``--agent package.module:factory`` directly, or run any program
through the ``command`` agent. A plug-in's factory may set ``needs_model = True``; its docstring's
first line is its description. A plug-in cannot replace a built-in agent's name.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from dataclasses import dataclass

from ..core.agent import Agent
from ..extras import missing_modules, require_extra
from .base import AgentConfig


@dataclass(frozen=True)
class AgentEntry:
    name: str
    target: str
    description: str
    needs_model: bool = False
    source: str = "built-in"
    load_error: str | None = None
    """Why a plug-in's factory does not import (shown by ``agents list``, raised by ``make_agent``)."""
    personas: tuple[str, ...] = ()
    """The personas whose scenarios the agent works on (``itbench run`` refuses others); empty: any."""
    extra: str | None = None
    """The package's optional extra the agent needs (``agents``: langgraph, litellm, ...), if any."""


_REGISTRY: dict[str, AgentEntry] = {}
_PLUGINS_LOADED = False


def register(
    name: str,
    target: str,
    description: str = "",
    needs_model: bool = False,
    personas: tuple[str, ...] = (),
    extra: str | None = None,
) -> None:
    _REGISTRY[name] = AgentEntry(name, target, description, needs_model, personas=personas, extra=extra)


register("noop", "itbench_agents.agents.noop:make_agent", "does nothing and reports no incident (a floor)")
register(
    "oracle",
    "itbench_agents.agents.oracle:make_agent",
    "applies the reference mitigation and reports the ground truth (validation only: privileged)",
)
register(
    "command",
    "itbench_agents.agents.command:make_agent",
    "runs an external program (--command) with KUBECONFIG, PROMETHEUS_URL, ... and reads agent_output.json",
)
register(
    "sre-react",
    "itbench_agents.agents.sre_react:make_agent",
    "LangGraph ReAct SRE agent (needs --model)",
    needs_model=True,
    personas=("sre",),
    extra="agents",
)
register(
    "ciso-react",
    "itbench_agents.agents.ciso_react:make_agent",
    "LangGraph CISO agent: write or edit a Kyverno policy, lint, deploy, read the reports, reflect (needs --model)",
    needs_model=True,
    personas=("ciso",),
    extra="agents",
)
register(
    "ciso-catalogue",
    "itbench_agents.agents.ciso_catalogue:make_agent",
    "CISO baseline without an LLM: the control's text → a catalogued Kyverno policy (what retrieval alone scores)",
    personas=("ciso",),
)
register(
    "finops-react",
    "itbench_agents.agents.finops_react:make_agent",
    "LangGraph FinOps agent: cost incidents with OpenCost and kubectl (the sre-react graph), anomalies with a sandboxed pandas tool (needs --model)",
    needs_model=True,
    personas=("finops",),
    extra="agents",
)
register(
    "finops-heuristic",
    "itbench_agents.agents.finops_heuristic:make_agent",
    "FinOps baseline without an LLM: a seasonal z-score detector (anomalies), a rightsizing recommender applied (cost incidents)",
    personas=("finops",),
)
register(
    "sre-heuristic",
    "itbench_agents.agents.sre_heuristic:make_agent",
    "rule-based SRE agent over the same tools (no LLM)",
    personas=("sre",),
)

# Audit strategies (itbench_agents/agents/audit/strategies.py; ``itbench scenarios audit``).
for _name, _factory, _destructive, _what in (
    ("audit-scale-loadgen", "make_scale_loadgen", True, "scales the load generator to zero"),
    ("audit-delete-alerting", "make_delete_alerting", True, "deletes the alerting Deployments and Services"),
    ("audit-scale-alerting", "make_scale_alerting", True, "scales the alerting workloads to zero"),
    ("audit-delete-namespace", "make_delete_namespace", True, "deletes the app's namespace"),
    ("audit-blind-telemetry", "make_blind_telemetry", True, "scales the telemetry pipeline to zero"),
    ("audit-restart-all", "make_restart_all", False, "rollout restart of every workload"),
    ("audit-shotgun", "make_shotgun", False, "names every workload as a root cause"),
    ("audit-alerting-root", "make_alerting_root", False, "names the alerting services as root cause"),
    ("audit-change-detection", "make_change_detection", False, "names every recent change (no alerts)"),
    ("audit-undo-changes", "make_undo_changes", False, "undoes every recent change it finds"),
    ("audit-blanket-reset", "make_blanket_reset", False, "resets everything that looks like a fault (blind)"),
    (
        "audit-blanket-vandal",
        "make_blanket_vandal",
        False,
        "the blanket reset, plus cordons, taints and deleted ServiceAccounts (blind)",
    ),
    (
        "audit-name-flag-file",
        "make_name_flag_file",
        False,
        "names the flag ConfigMap when a flag is on (blind)",
    ),
    (
        "audit-newest-rollout",
        "make_newest_rollout",
        False,
        "names the last rollout's Deployment (blind)",
    ),
    (
        "audit-constant-answer",
        "make_constant_answer",
        False,
        "names the library's strongest fixed answer (blind, judged on the whole library)",
    ),
):
    register(
        _name,
        f"itbench_agents.agents.audit.strategies:{_factory}",
        f"audit strategy{' (destructive)' if _destructive else ''}: {_what}",
        personas=("sre",),
    )


# FinOps anomaly audit strategies (itbench_agents/agents/audit/finops.py; ``--suite finops``).
for _name, _what in (
    ("shotgun", "names every resource of the alert's account"),
    ("account", "names the alert's account"),
    ("biggest-spender", "names the application that costs most on the alert's day"),
):
    register(
        f"audit-finops-{_name}",
        f"itbench_agents.agents.audit.finops:make_{_name.replace('-', '_')}",
        f"audit strategy (blind): {_what}",
        personas=("finops",),
    )

# FinOps cost-incident audit strategies (itbench_agents/agents/audit/finops_twin.py; ``--suite finops``).
for _name, _what in (
    ("scale-to-zero", "scales every workload of the namespace to zero (destructive)"),
    ("delete-app", "deletes every Deployment and StatefulSet of the namespace (destructive)"),
    ("silence", "deletes the namespace's cost alerts (destructive)"),
    ("blanket-cutter", "deletes HPAs, CronJobs, Jobs, DaemonSets; one replica, tiny requests (blind)"),
    ("trim", "deletes HPAs, CronJobs, Jobs; one replica; node selectors removed (blind)"),
):
    register(
        f"audit-finops-{_name}",
        f"itbench_agents.agents.audit.finops_twin:make_{_name.replace('-', '_')}",
        f"audit strategy: {_what}",
        personas=("finops",),
    )

# CISO audit strategies (itbench_agents/agents/audit/ciso.py; ``itbench scenarios audit --suite ciso``).
for _name, _what in (
    ("deny-everything", "a policy that fails every Pod"),
    ("match-nothing", "a policy that matches only ConfigMaps"),
    ("name-only", "a policy that fails the namespace's workloads by name"),
    ("labels-only", "a policy that fails the namespace's workloads by their labels"),
    ("new-policy-instead", "updates: the control's rule as a new policy instead of an edit"),
    ("rename-the-edited", "updates: the edit saved under a new name"),
    ("weaken-the-other", "updates: the edit, and a rule dropped from the other policies"),
    ("deny-all-edit", "updates: a fail-every-Pod rule added to a deployed policy"),
):
    register(
        f"audit-ciso-{_name}",
        f"itbench_agents.agents.audit.ciso:make_{_name.replace('-', '_')}",
        f"CISO audit strategy (blind): {_what}",
        personas=("ciso",),
    )


for _name, _what in (
    ("rego-always-false", "k8s-opa, rhel-opa: a policy that always says false"),
    ("rego-always-true", "k8s-opa, rhel-opa: a policy that always says true"),
    ("rego-nonempty", "k8s-opa, rhel-opa: a policy that says false whenever anything was fetched"),
    ("rego-constant-data", "k8s-opa, rhel-opa: the catalogue's policy on a constant file, not the cluster"),
    ("rhel-remediate", "rhel-opa: the catalogue's playbook, fixing the host before it collects"),
):
    register(
        f"audit-ciso-{_name}",
        f"itbench_agents.agents.audit.ciso_rego:make_{_name.replace('-', '_')}",
        f"CISO audit strategy (blind): {_what}",
        personas=("ciso",),
    )


class UnknownAgentError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def _load_plugins() -> None:
    """Add the agents of installed packages' entry points (once per process)."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from ..plugins import AGENTS_GROUP, PluginError, plugins

    for p in plugins(AGENTS_GROUP):
        if p.name in _REGISTRY:
            continue  # built-ins keep their names; `agents list` shows the one that runs
        try:
            factory = p.load()
        except PluginError as exc:
            _REGISTRY[p.name] = AgentEntry(
                p.name, p.value, "does not load", source=p.source, load_error=str(exc)
            )
            continue
        doc = (getattr(factory, "__doc__", None) or "").strip()
        description = doc.splitlines()[0] if doc else f"plug-in agent ({p.value})"
        needs_model = bool(getattr(factory, "needs_model", False))
        _REGISTRY[p.name] = AgentEntry(p.name, p.value, description, needs_model, p.source)


def entries() -> list[AgentEntry]:
    _load_plugins()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def entry(name: str) -> AgentEntry:
    """The registry entry for ``name``; a ``package.module:factory`` string names an unregistered agent."""
    _load_plugins()
    if name not in _REGISTRY and ":" in name and not name.startswith(":"):
        return AgentEntry(name, name, "plug-in agent", source="--agent module:factory")
    if name not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(name, list(_REGISTRY), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownAgentError(f"unknown agent {name!r}{hint} (known: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name]


def available(name: str) -> bool:
    """Whether the agent's module can be imported (its area or its optional extra may not be installed)."""
    e = entry(name)
    if e.load_error or (e.extra and missing_modules(e.extra)):
        return False
    mod = e.target.split(":")[0]
    try:
        return importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):
        return False


def make_agent(name: str, config: AgentConfig | None = None) -> Agent:
    e = entry(name)
    if e.load_error:
        raise ImportError(e.load_error)
    if e.extra:
        require_extra(e.extra, f"agent {name!r}")
    module_name, _, attr = e.target.partition(":")
    module = importlib.import_module(module_name)
    factory = getattr(module, attr)
    agent: Agent = factory(config or AgentConfig())
    return agent


def warm(name: str, config: AgentConfig | None = None) -> None:
    """Import what the agent's turn would import: its module, and what its module's ``warm(config)``
    imports, if it has one (the LLM agents: their graph and their model's chat library; litellm
    alone takes seconds). The harness calls it before each agent's timed turn (no turn pays for
    imports, whichever episode of its process it is), and before a shared preparation forks one
    child per episode (``harness/shared.py``: the children find them loaded). Never raises: an
    agent that does not load fails in its episode, as without this."""
    with contextlib.suppress(Exception):
        e = entry(name)
        if e.load_error:
            return
        module = importlib.import_module(e.target.partition(":")[0])
        hook = getattr(module, "warm", None)
        if callable(hook):
            hook(config or AgentConfig())


def preflight(name: str, config: AgentConfig) -> None:
    """Run the agent module's ``preflight(config)`` if it has one (model string, API key, server
    reachable...). Raises with one clear message before a run starts (:class:`MissingExtraError`
    when the agent's optional extra is not installed)."""
    e = entry(name)
    if e.extra:
        require_extra(e.extra, f"agent {name!r}")
    module_name = e.target.partition(":")[0]
    check = getattr(importlib.import_module(module_name), "preflight", None)
    if callable(check):
        check(config)
