"""``python -m itbench_dev``: developer utilities (conformance runners), in a checkout only."""

from __future__ import annotations

from pathlib import Path

import typer

dev_app = typer.Typer(
    help="Developer utilities (conformance runners).", no_args_is_help=True, add_completion=False
)


@dev_app.callback()
def _group() -> None:
    """Developer utilities of a checkout (conformance runners); not in the wheel."""


@dev_app.command("promql-conformance")
def promql_conformance(
    directory: Path = typer.Argument(..., help="Folder of Prometheus promqltest *.test scripts."),
    failures: bool = typer.Option(False, "--failures", "-f", help="List every failing eval with its reason."),
    skips: bool = typer.Option(False, "--skips", help="Summarise skip reasons."),
    as_json: bool = typer.Option(
        False, "--json", help="print JSON (per file and in total)", envvar="ITBENCH_JSON"
    ),
) -> None:
    """Run PromQL conformance scripts against the twin's engine: pass rate per file and in total."""
    import warnings
    from collections import Counter

    from rich.console import Console
    from rich.table import Table

    from itbench_agents.console import print_table

    from .prometheus.conformance import run_dir, summary

    console = Console()
    if not directory.is_dir():
        console.print(f"[red]not a directory: {directory}[/]")
        raise typer.Exit(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reports = run_dir(directory)
    if not reports:
        console.print(f"[yellow]no *.test files in {directory}[/]")
        raise typer.Exit(1)
    s = summary(reports)
    exit_code = 0 if s["failed"] == 0 or s["rate_run"] >= 0.9 else 1
    if as_json:
        import json

        files = [
            {
                "file": r.file,
                "passed": r.passed,
                "failed": r.failed,
                "skipped": r.skipped,
                "skipped_native_histogram": r.skipped_nh,
                "pass_rate": r.rate(),
            }
            for r in reports
        ]
        print(json.dumps({"files": files, "total": s}, indent=1))
        raise typer.Exit(exit_code)
    table = Table(title=f"PromQL conformance: {directory}")
    for col in ("file", "passed", "failed", "skipped", "of which native hist.", "pass rate"):
        table.add_column(col, justify="left" if col == "file" else "right")
    for r in reports:
        table.add_row(
            r.file, str(r.passed), str(r.failed), str(r.skipped), str(r.skipped_nh), f"{r.rate():.1%}"
        )
    table.add_row(
        "[bold]total[/]",
        f"{s['passed']:.0f}",
        f"{s['failed']:.0f}",
        f"{s['skipped']:.0f}",
        f"{s['skipped_native_histogram']:.0f}",
        f"[bold]{s['rate_run']:.1%}[/]",
    )
    print_table(table)
    console.print(
        f"pass rate of evaluated cases: {s['rate_run']:.1%}; of all non-native-histogram cases "
        f"(unsupported experimental features counted as not passed): {s['rate_non_nh']:.1%}"
    )
    if skips:
        c = Counter(r.reason for rep in reports for r in rep.results if r.status == "skip")
        for reason, n in c.most_common():
            console.print(f"  skip x{n}: {reason}")
    if failures:
        for rep in reports:
            for case in rep.results:
                if case.status == "fail":
                    console.print(f"  [red]FAIL[/] {rep.file}:{case.line} {case.expr}\n       {case.reason}")
    raise typer.Exit(exit_code)
