"""finops-react: the FinOps agent as LangGraph graphs (``agent.py``).

- a cost incident on a cluster (diagnosis and mitigation): the sre-react graph with FinOps prompts
  (``prompts/finops_react/``) and the ``opencost`` tool beside the direct (or NL2*) tools;
- a cost anomaly (ITBench-Lite's billing data): ``anomaly.py``, a ReAct loop over the sandboxed
  ``analysis`` tool (pandas over ``data.csv``) that ends with the answer's JSON, which the agent
  saves as ``answer.json``.

``make_agent(config)`` is the registry factory; ``preflight(config)`` checks the model settings.
"""

from __future__ import annotations

from ..base import AgentConfig
from .agent import FinopsReactAgent


def make_agent(config: AgentConfig) -> FinopsReactAgent:
    return FinopsReactAgent(config)


def warm(config: AgentConfig) -> None:
    """Import what the agent's turns import: sre-react's graph and models, the anomaly graph."""
    from ..sre_react import warm as sre_warm
    from . import anomaly  # noqa: F401

    sre_warm(config)


def preflight(config: AgentConfig) -> None:
    from ..sre_react import preflight as sre_preflight

    sre_preflight(config)


__all__ = ["FinopsReactAgent", "make_agent", "preflight", "warm"]
