"""``itbench kyverno test DIR``: run ``kyverno test``-format cases through the twin's Kyverno
engine, as the Kyverno CLI does, and print pass/fail per case and outcome totals.

    itbench kyverno test ../shared/conformance/kyverno            # the conformance table
    itbench kyverno test my-policies/ --failures                  # every mismatch, with the reason
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

kyverno_app = typer.Typer(help="The twin's Kyverno engine.", no_args_is_help=True)


@kyverno_app.command("test")
def test_cmd(
    directory: Annotated[Path, typer.Argument(help="folder searched for kyverno-test.yaml files")],
    failures: Annotated[
        bool, typer.Option("--failures", "-f", help="list every mismatching outcome")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON", envvar="ITBENCH_JSON")] = False,
) -> None:
    """Run the cases; exit 1 when an outcome differs from its expectation (as `kyverno test`)."""
    from rich.table import Table

    from ....console import print_table
    from .testcases import find_test_files, run_dir

    if not directory.is_dir():
        typer.echo(f"error: {directory}: not a folder", err=True)
        raise typer.Exit(2)
    if not find_test_files(directory):
        typer.echo(f"error: no kyverno-test.yaml under {directory}", err=True)
        raise typer.Exit(2)
    reports = run_dir(directory)
    summary = conformance(directory, reports)
    if as_json:
        rows = [
            {"case": r.file, "test": r.name, "passed": r.passed, "failed": r.failed, "error": r.error}
            for r in reports
        ]
        print(json.dumps({"tests": rows, "summary": summary}, indent=1))
        raise typer.Exit(0 if summary["mismatched"] == 0 else 1)
    t = Table(title=f"kyverno test {directory}")
    for c in ("case", "test", "outcomes ok", "failed", "error"):
        t.add_column(c, overflow="fold")
    for r in reports:
        t.add_row(
            r.file, r.name, f"{r.passed}/{len(r.outcomes)}", str(r.failed) if r.failed else "", r.error or ""
        )
    print_table(t)
    if failures:
        for r in reports:
            for o in r.outcomes:
                if not o.ok:
                    typer.echo(
                        f"  {r.file}: {o.policy}/{o.rule or '*'} {o.resource}: want {o.expected}, got {o.got} — {o.detail}"
                    )
    typer.echo(
        f"outcomes: {summary['ok']}/{summary['outcomes']} as expected ({summary['rate']:.1%}); "
        f"by cause of mismatch: {summary['mismatch_causes'] or 'none'}"
    )
    if summary["expected_runner_failures"]:
        typer.echo(
            f"cases where upstream expects the run to fail, and it did: {summary['expected_runner_failures']}"
        )
    raise typer.Exit(0 if summary["mismatched"] == 0 else 1)


def conformance(directory: Path, reports: list) -> dict:  # type: ignore[type-arg]
    """Outcome totals. Cases that ``index.json`` (the conformance folder's) marks
    ``expect_runner_failure`` count as expected when they do fail."""
    expect_fail: set[str] = set()
    index = directory / "index.json"
    if index.is_file():
        try:
            data = json.loads(index.read_text())
            expect_fail = {c["case"] for c in data.get("cases", []) if c.get("expect_runner_failure")}
        except (ValueError, KeyError, TypeError):
            expect_fail = set()
    total = ok = 0
    causes: Counter[str] = Counter()
    runner_failed: list[str] = []
    for r in reports:
        for o in r.outcomes:
            total += 1
            good = r.failed > 0 if r.file in expect_fail else o.ok
            ok += good
            if not good:
                causes[o.got if o.got in ("unsupported", "missing") else "wrong result"] += 1
        if r.error and not r.outcomes:  # a test file that cannot be read is one failure, not zero
            total += 1
            causes["unreadable test"] += 1
        if r.file in expect_fail and r.failed:
            runner_failed.append(r.file)
    return {
        "outcomes": total,
        "ok": ok,
        "mismatched": total - ok,
        "rate": ok / total if total else 1.0,
        "mismatch_causes": dict(causes),
        "expected_runner_failures": sorted(set(runner_failed)),
    }
