"""CLI commands of the harness: run, score, report, agents (placeholder: filled in by its area)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the harness' top-level commands to ``app``."""
