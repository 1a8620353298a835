"""CLI commands (placeholder: filled in by its area)."""

from __future__ import annotations

import typer

dev_app = typer.Typer(help="Developer utilities (conformance runners).", no_args_is_help=True)
