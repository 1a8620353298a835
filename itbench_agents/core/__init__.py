"""The contracts every layer above shares: what an agent is told (``task``), where it finds the
environment (``endpoints``), what it hands back (``output``), the Agent protocol and its event sink
(``agent``), the trajectory events (``events``), a named score (``score``) and the persona plug-in
point (``persona``).

Pydantic models and protocols only: this package imports nothing else of ``itbench_agents``.
"""
