"""Entry point for LangGraph Studio / ``langgraph dev`` (``langgraph.json`` points here).

Studio loads this file by path, so it uses absolute imports only. Set ``ITBENCH_ENDPOINTS`` (an
endpoints file from ``itbench twin serve --endpoints FILE``) and ``ITBENCH_MODEL``, or fill in the
run's context in Studio.
"""

from itbench_agents.agents.sre_react.graph import graph

__all__ = ["graph"]
