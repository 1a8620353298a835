"""ciso-react: the paper's CISO agent (§6.3) as a LangGraph graph (``graph.py``): write a Kyverno
policy for the goal's control (or edit the deployed ones), lint it with a server-side dry run,
deploy it, read the PolicyReports, and reflect on what went wrong up to three times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ...core.agent import EventSink
from ...core.output import AgentOutput, Usage
from ...core.task import Task
from ...k8s.client import KubeApi
from ..base import AgentConfig


class CisoReactAgent:
    name = "ciso-react"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        from ..llm_agent import agent_llm
        from .graph import Context, State, graph

        cfg = self.config
        llm = agent_llm(cfg, events)
        api = KubeApi.from_kubeconfig(task.endpoints.kube_url, task.endpoints.kubeconfig)
        ctx = Context(task, llm, api, events, max_retries=int(cfg.options.get("max_retries", 3)))
        final: Any = graph.invoke(State(), context=ctx, config={"recursion_limit": 100})
        state = State(**final) if isinstance(final, dict) else final
        if state.policies:
            Path(task.workdir, "policy.yaml").write_text(yaml.safe_dump_all(state.policies, sort_keys=False))
        termination = state.termination
        if termination == "completed" and not state.ok:
            termination = "gave_up"
        return AgentOutput(
            mitigation_actions=state.log,
            steps=llm.calls,
            usage=Usage(
                input_tokens=llm.input_tokens,
                output_tokens=llm.output_tokens,
                cost_usd=llm.cost_usd,
                model_calls=llm.calls,
            ),
            extra={"termination": termination, "attempts": state.attempt, "last_feedback": state.feedback},
        )


def make_agent(config: AgentConfig) -> CisoReactAgent:
    return CisoReactAgent(config)
