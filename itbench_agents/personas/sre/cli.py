"""The twin scenario files' parts of ``itbench scenarios list|validate|audit`` (the scenarios CLI
hands the ``sre`` suite, the default, and FinOps' cost incidents to these): SRE's scenarios are twin
scenario files, and FinOps' cost incidents share their format and their checks."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer


def list_twin(scenarios: list[Any], as_json: bool) -> None:
    """``itbench scenarios list`` of twin scenario files: id, app, category, complexity, alerts."""
    from rich.table import Table

    from ...console import print_table

    if as_json:
        print(json.dumps([s.summary() for s in scenarios], indent=2))
        return
    t = Table(title=f"{len(scenarios)} scenarios")
    for col in ("id", "app", "ITB", "category", "complexity", "alerts", "tags"):
        t.add_column(col, overflow="fold")
    for s in scenarios:
        t.add_row(
            s.id,
            s.app,
            str(s.metadata.itbench_number or ""),
            s.category,
            f"{s.complexity_bucket} ({s.complexity:.2f})",
            ", ".join(a.name for a in s.alerts),
            ", ".join(s.tags),
        )
    print_table(t)


def validate_twin(
    scenarios: list[Any],
    seed: int,
    history_s: float,
    churn: str,
    jobs: int,
    as_json: bool,
    anomaly_report: dict[str, Any] | None = None,
) -> None:
    """``itbench scenarios validate`` of twin scenario files (``validate.py``), ``jobs`` at a time;
    with ``anomaly_report`` (``--suite finops``) its JSON beside theirs and its verdict in the exit
    status (1 when anything fails)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .validate import validate_by_id

    console = Console(stderr=True)
    results = []
    args = [(s.id, seed, history_s, churn) for s in scenarios]
    with Progress(
        TextColumn("validate"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        disable=as_json or not console.is_terminal,
    ) as progress:
        task = progress.add_task("", total=len(args))
        failed = 0

        def done(r: dict) -> None:  # type: ignore[type-arg]
            nonlocal failed
            results.append(r)
            failed += not r["ok"]
            progress.update(
                task, advance=1, description=f"[green]{len(results) - failed} ok[/] [red]{failed} failed[/]"
            )
            if not as_json:
                mark = "[green]PASS[/]" if r["ok"] else "[red]FAIL[/]"
                console.print(f"{mark} {r['scenario_id']} ({r['wall_s']:.1f}s)", highlight=False)
                for c in r["checks"]:
                    if not c["ok"]:
                        console.print(f"     ✗ {c['name']}: {c['detail']}", highlight=False, markup=False)

        if jobs <= 1:
            for a in args:
                done(validate_by_id(a))
        else:
            with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
                for r in pool.map(validate_by_id, args):
                    done(r)
    if as_json:
        if anomaly_report is not None:
            print(json.dumps({"anomaly": anomaly_report["json"], "twin": results}, indent=2))
        else:
            print(json.dumps(results, indent=2))
    bad = [r for r in results if not r["ok"]]
    if not as_json:
        console.print(f"{len(results) - len(bad)}/{len(results)} scenarios valid")
    sys.stdout.flush()
    if bad or (anomaly_report is not None and not anomaly_report["ok"]):
        raise typer.Exit(1)


def audit_twin(
    scenarios: list[Any],
    strategies: list[str],
    jobs: int,
    history_s: float,
    run_dir: str | None,
    verbose: bool,
    as_json: bool,
    anomaly_report: dict[str, Any] | None = None,
) -> None:
    """``itbench scenarios audit`` of twin scenario files (``audit.py``): each strategy through the
    harness on each scenario, the totals (and with ``verbose`` the per-scenario table), the
    violations; exit status 1 with a violation (or a failed ``anomaly_report``), 130 when
    interrupted."""
    import shutil
    import tempfile

    from rich.console import Console
    from rich.table import Table

    from ...console import table_console
    from .audit import is_blind, is_destructive, is_judged, mark, run_audit

    err = Console(stderr=True)
    tmp = None
    if run_dir is None:
        tmp = tempfile.mkdtemp(prefix="itbench-audit-")
        folder = tmp
    else:
        folder = run_dir
    done = 0
    total = len(scenarios) * len(strategies)

    def progress(rec) -> None:  # type: ignore[no-untyped-def]
        nonlocal done
        done += 1
        if not as_json and err.is_terminal:
            err.print(f"[{done}/{total}] {rec.agent} {rec.scenario_id}: {rec.termination}", highlight=False)

    from ...harness.batch import BatchInterrupted, interrupt_on_signals

    restore_signals = interrupt_on_signals(second_exits=True)
    try:
        res = run_audit(
            [s.id for s in scenarios], strategies, folder, jobs=jobs, history_s=history_s, on_record=progress
        )
    except BatchInterrupted as e:
        err.print(f"interrupted after {e.summary.ran} of {total} episode(s): no verdict", highlight=False)
        raise typer.Exit(130) from None
    finally:
        restore_signals()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if as_json:
        doc = res.to_json()
        print(
            json.dumps(
                doc if anomaly_report is None else {"anomaly": anomaly_report["json"], "twin": doc}, indent=2
            )
        )
    else:
        out = table_console()
        if verbose:
            t = Table(title="per scenario: diagnosis, mitigation (✓ pass, ✗ fail, · n/a, E error)")
            t.add_column("scenario", overflow="fold")
            for s in strategies:
                t.add_column(s.removeprefix("audit-"))
            for sid in res.scenarios:
                t.add_row(sid, *(mark(res.cells.get((s, sid))) for s in strategies))
            out.print(t)
        t = Table(
            title=f"audit: {len(scenarios)} scenario(s), {len(strategies)} strategies, {res.wall_s:.0f} s"
        )
        for col in ("strategy", "judged as", "diagnosis pass", "mitigation pass", "acted", "errors"):
            t.add_column(col)
        for s in strategies:
            tot = res.totals(s)
            n, m = tot["episodes"], tot["mitigation_applicable"]
            t.add_row(
                s,
                "destructive"
                if is_destructive(s)
                else (
                    ("blind" if res.rate_judged(s) else "blind (--all)")
                    if is_blind(s)
                    else ("reference" if is_judged(s) else "reported")
                ),
                f"{tot['diagnosis_pass']}/{n}",
                f"{tot['mitigation_pass']}/{m}",
                f"{tot['acted']}/{n}",
                str(tot["errors"]),
            )
        out.print(t)
    bad = res.violations()
    for v in bad:
        err.print(f"[red]✗[/red] {v}", highlight=False, soft_wrap=True)
    if not as_json:
        err.print(f"{len(bad)} violation(s)" if bad else "no violation", highlight=False)
    sys.stdout.flush()
    if bad or (anomaly_report is not None and not anomaly_report["ok"]):
        raise typer.Exit(1)
