"""CLI commands (placeholder: filled in by its area)."""

from __future__ import annotations

import typer

mcp_app = typer.Typer(help="Serve the agent tools over the Model Context Protocol.", no_args_is_help=True)
