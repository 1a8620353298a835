"""``itbench opa agreement DIR``: the twin's Rego engine beside real OPA on a corpus of policies and
inputs (``agreement.py``), one row per comparison and the totals.

    itbench opa agreement tests/twin/addons/opa/agreement               # the table CI prints
    itbench opa agreement tests/twin/addons/opa/agreement --differences # only the rows where the engines differ
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

opa_app = typer.Typer(help="The twin's OPA (Rego on regorus).", no_args_is_help=True)


@opa_app.command("agreement")
def agreement_cmd(
    directory: Annotated[Path, typer.Argument(help="folder of corpus *.yaml files")],
    reference: Annotated[
        Path | None,
        typer.Option(
            "--reference",
            help="folder holding the opa_bindings package (default: $ITBENCH_OPA_BINDINGS, "
            "then ~/.cache/itbench/opa-bindings)",
        ),
    ] = None,
    differences: Annotated[
        bool, typer.Option("--differences", help="list only the rows that differ")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON", envvar="ITBENCH_JSON")] = False,
) -> None:
    """Exit 1 on an undocumented difference, or a documented one that no longer happens."""
    from rich.table import Table

    from ....console import print_table
    from .agreement import TwinEngine, compare, find_reference, load_corpus, stale_cases, summary

    if not directory.is_dir():
        typer.echo(f"error: {directory}: not a folder", err=True)
        raise typer.Exit(2)
    try:
        cases = load_corpus(directory)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    opa = find_reference(reference)
    if opa is None:
        typer.echo(
            "error: no reference OPA: put opa-golib-python-bindings' opa_bindings package in "
            "~/.cache/itbench/opa-bindings (what .ci/run does) or pass --reference",
            err=True,
        )
        raise typer.Exit(2)
    ours = TwinEngine()
    try:
        rows = compare(cases, ours, opa)
    finally:
        ours.engine.close()
    totals = summary(rows)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "summary": totals,
                    "rows": [
                        {"case": r.case.name, "input": r.input_label, "twin": str(r.ours),
                         "opa": str(r.theirs), "verdict": r.verdict}
                        for r in rows
                    ],
                },
                indent=2,
            )
        )  # fmt: skip
    else:
        table = Table(title=f"Rego agreement: {ours.name} vs {opa.name}")
        for col in ("case", "input", "twin", "OPA", "verdict"):
            table.add_column(col)
        for r in rows:
            if differences and r.agree:
                continue
            table.add_row(r.case.name, r.input_label, str(r.ours), str(r.theirs), r.verdict)
        print_table(table)
        typer.echo(
            f"agreement: {totals['agree']}/{totals['comparisons']} comparisons identical over {totals['cases']} cases; "
            f"{totals['documented']} documented differences, {totals['UNEXPECTED']} unexpected, {totals['STALE']} stale"
        )
        for name in stale_cases(rows):
            typer.echo(f"stale: {name} is documented as differing, but the engines now agree")
    if totals["UNEXPECTED"] or totals["STALE"]:
        raise typer.Exit(1)
