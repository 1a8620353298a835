"""``itbench export``: a run's episodes in an interchange format (ATIF, ``report/atif.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def export_cmd(
    run_dir: Annotated[Path, typer.Argument(help="run folder")],
    out: Annotated[Path | None, typer.Option(help="output folder (default: RUN_DIR/atif)")] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="atif: Agent Trajectory Interchange Format v1.4 (Harbor, SREGym)")
    ] = "atif",
) -> None:
    """Write each episode of a run as an ATIF trajectory (one <episode_id>.json each)."""
    from ..harness.runfolder import RunFolderError
    from ..report.atif import export_run

    if fmt != "atif":
        typer.echo(f"error: unknown --format {fmt!r} (known: atif)", err=True)
        raise typer.Exit(2)
    try:
        written = export_run(run_dir, out)
    except RunFolderError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    folder = out if out is not None else run_dir / "atif"
    typer.echo(f"{len(written)} episode(s) as ATIF trajectories in {folder}")
