"""Kubernetes semantics as pure functions over objects as dicts: the bottom layer, which imports
nothing else of ``itbench_agents`` (see README.md)."""
