"""Audit agents: naive and destructive strategies that attack the benchmark's scores.

``itbench scenarios audit`` runs them on every scenario; a destructive strategy that passes
mitigation anywhere means the scorer can be gamed (see ``strategies.py`` and docs/metrics.md).
"""
