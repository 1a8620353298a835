"""CLI commands (placeholder: filled in by its area)."""

from __future__ import annotations

import typer

scenarios_app = typer.Typer(help="List, show and validate scenarios.", no_args_is_help=True)
