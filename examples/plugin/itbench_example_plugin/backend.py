"""The ``small-twin`` backend: the embedded twin on a two-node cluster instead of three. A
deliberately small backend: it shows the backend seam (a factory the ``itbench_agents.backends``
entry point names, checked by ``itbench backends check small-twin``), not a new kind of cluster.

A backend for a live cluster implements the same protocol (``itbench_agents/harness/backend.py``):
provision the app and return its endpoints, the clock (``advance`` waits where it cannot
fast-forward), the app's call graph and journeys, ``close``.
"""

from __future__ import annotations

from itbench_agents.harness.twin_backend import TwinBackend


class SmallTwin(TwinBackend):
    name = "small-twin"

    def __init__(self) -> None:
        super().__init__(nodes=2)
