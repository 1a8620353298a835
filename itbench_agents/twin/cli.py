"""CLI commands (placeholder: filled in by its area)."""

from __future__ import annotations

import typer

twin_app = typer.Typer(help="Run and inspect the embedded Kubernetes twin.", no_args_is_help=True)
