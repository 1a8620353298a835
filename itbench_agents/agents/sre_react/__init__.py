"""sre-react: the paper's SRE agent as a LangGraph graph (diagnosis ReAct → structured diagnosis →
mitigation ReAct with alert checks and reflection). See ``graph.py`` for the shape.

``make_agent(config)`` is the registry factory; ``preflight(config)`` checks the model
configuration before a run starts; ``graph`` (in ``graph.py``) opens in LangGraph Studio.
"""

from __future__ import annotations

from ..base import AgentConfig
from .agent import SREReactAgent


def make_agent(config: AgentConfig) -> SREReactAgent:
    return SREReactAgent(config)


def warm(config: AgentConfig) -> None:
    """Import what the agent's turn imports: its graph (LangGraph) and its models' chat libraries
    (``registry.warm``)."""
    from ..llm_agent import warm_model_libraries
    from .graph import graph  # noqa: F401

    warm_model_libraries(config)


def preflight(config: AgentConfig) -> None:
    """Raise :class:`~itbench_agents.llm.models.ModelConfigError` with one clear message when the
    agent model or tool model cannot work (unknown string, missing key, unreachable server)."""
    from ...llm.preflight import preflight_model
    from ..llm_agent import settings_for

    replay = bool(config.replay_dir)
    preflight_model(settings_for(config), replay_dir=config.replay_dir, role="agent")
    from ...tools.toolsets import check_tools

    if check_tools(config.tools).mode == "nl2" and (config.tool_model or not replay):
        preflight_model(settings_for(config, tools=True), replay_dir=config.replay_dir, role="tools")


__all__ = ["SREReactAgent", "make_agent", "preflight", "warm"]
