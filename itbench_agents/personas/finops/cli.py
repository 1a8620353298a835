"""The FinOps parts of ``itbench scenarios list|show|validate|audit --suite finops`` (the scenarios CLI
hands ``finops`` suites to these)."""

from __future__ import annotations

import json
from typing import Any

import typer


def _library():  # type: ignore[no-untyped-def]
    from rich.console import Console

    from .library import FinopsLibraryError, finops_library

    try:
        return finops_library()
    except FinopsLibraryError as e:
        Console(stderr=True).print(
            f"[red]FinOps scenario library does not load:[/red]\n{e}", markup=True, highlight=False
        )
        raise typer.Exit(2) from None


def list_finops(as_json: bool) -> None:
    from rich.table import Table

    from ...console import print_table
    from ...scenario.registry import ScenarioRegistry

    rows = [
        {
            "id": s.id,
            "class": s.task_class,
            "anomaly": f"{s.anomaly.kind} on {s.anomaly.level}",
            "look-alikes": [b.kind for b in s.benign],
            "complexity": s.complexity,
        }
        for s in _library()
    ]
    rows += [  # cost incidents on the twin (SRE-format scenario files)
        {
            "id": s.id,
            "class": "twin",
            "anomaly": ", ".join(a.name for a in s.alerts),
            "look-alikes": [],
            "complexity": s.complexity_bucket,
        }
        for s in ScenarioRegistry.default().all()
        if s.persona == "finops"
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title=f"{len(rows)} scenarios")
    for col in ("id", "class", "anomaly / alerts", "look-alikes", "complexity"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["id"], r["class"], r["anomaly"], ", ".join(r["look-alikes"]), r["complexity"])
    print_table(t)


def show_finops(scenario_id: str, as_json: bool) -> bool:
    """Show an anomaly scenario; False when ``scenario_id`` is none (a FinOps scenario of the SRE
    format is shown by the SRE path)."""
    by_id = {s.id: s for s in _library()}
    sc = by_id.get(scenario_id) or by_id.get(f"finops/{scenario_id}")
    if sc is None:
        return False
    if as_json:
        print(sc.model_dump_json(indent=2))
        return True
    import yaml

    print(f"# class {sc.task_class}; complexity {sc.complexity}")
    print(yaml.safe_dump(json.loads(sc.model_dump_json(exclude_defaults=True)), sort_keys=False), end="")
    return True


def _chosen(ids: list[str]):  # type: ignore[no-untyped-def]
    import fnmatch

    scenarios = _library()
    if not ids:
        return scenarios
    out = [
        s
        for s in scenarios
        if any(fnmatch.fnmatchcase(s.id, q) or fnmatch.fnmatchcase(s.id, f"finops/{q}") for q in ids)
    ]
    if not out:
        typer.echo(f"error: no FinOps scenario matches {', '.join(ids)}", err=True)
        raise typer.Exit(2)
    return out


def validate_finops_suite(
    ids: list[str], as_json: bool, exit_on_failure: bool = True, twin_ids: bool = False
) -> dict[str, Any]:
    """Validate the anomaly scenarios named by ``ids`` (all without); returns ``{"ok", "json"}``.
    With ``twin_ids``, ids that name no anomaly scenario are left for the twin's validation
    (FinOps scenarios of the SRE format) instead of being an error; ``as_json`` leaves the printing
    to the caller."""
    from rich.table import Table

    from ...console import print_table
    from .validate import library_problems, validate_anomaly

    if twin_ids:
        narrowed = _anomaly_ids(ids)
        if narrowed is None:
            return {"ok": True, "json": {"scenarios": [], "library": []}}
        ids = narrowed
    chosen = _chosen(ids)
    results = [validate_anomaly(s) for s in chosen]
    bad = [r for r in results if not r.ok]
    shared = library_problems(chosen)
    report = {
        "ok": not (bad or shared),
        "json": {"scenarios": [r.__dict__ for r in results], "library": shared},
    }
    if as_json:
        if not twin_ids:
            print(json.dumps(report["json"], indent=2))
    else:
        t = Table(title=f"{len(results) - len(bad)}/{len(results)} FinOps scenarios valid")
        for col in ("scenario", "ok", "rows", "signal", "problems"):
            t.add_column(col, overflow="fold")
        for r in results:
            t.add_row(r.scenario_id, "✓" if r.ok else "✗", str(r.rows), r.signal, "; ".join(r.problems))
        print_table(t)
        for line in shared:
            typer.echo(f"library: {line}", err=True)
    if exit_on_failure and (bad or shared):
        raise typer.Exit(1)
    return report


def _anomaly_ids(ids: list[str]) -> list[str] | None:
    """``ids`` narrowed to those naming an anomaly scenario; None when every id names something else
    (a FinOps scenario of the SRE format, left to the twin)."""
    import fnmatch

    if not ids:
        return ids
    known = {s.id for s in _library()}
    out = [
        q
        for q in ids
        if any(fnmatch.fnmatchcase(k, q) or fnmatch.fnmatchcase(k, f"finops/{q}") for k in known)
    ]
    return out or None


def audit_finops_suite(
    ids: list[str], as_json: bool, exit_on_failure: bool = True, twin_ids: bool = False
) -> dict[str, Any]:
    """Audit the anomaly scenarios named by ``ids`` (all without); returns ``{"ok", "json"}``. With
    ``twin_ids``, ids that name no anomaly scenario are left for the cost-incident audit on the twin
    and ``as_json`` leaves the printing to the caller (as :func:`validate_finops_suite`)."""
    from rich.table import Table

    from ...console import print_table
    from .audit import audit_anomalies

    if twin_ids:
        narrowed = _anomaly_ids(ids)
        if narrowed is None:
            return {"ok": True, "json": []}
        ids = narrowed
    results = audit_anomalies(_chosen(ids))
    failed = [r for r in results if not r.ok]
    rows = [
        {
            "strategy": r.name,
            "pinpointed": r.pinpointed,
            "rate": r.rate,
            "limit": r.limit,
            "ok": r.ok,
            "f1": r.f1,
        }
        for r in results
    ]
    if as_json:
        if not twin_ids:
            print(json.dumps(rows, indent=2))
    else:
        t = Table(title="FinOps anomaly audit (pinpointed = the pass)")
        for col in ("strategy", "pinpointed", "limit", "root_cause_resource", "mean F1", "verdict"):
            t.add_column(col)
        for r in results:
            limit = "—" if r.limit is None else f"{100 * r.limit:.0f}%"
            verdict = "baseline" if r.limit is None else ("ok" if r.ok else "FAIL")
            t.add_row(
                r.name,
                f"{len(r.pinpointed)}/{r.scenarios}",
                limit,
                f"{r.root_cause}/{r.scenarios}",
                f"{r.f1:.2f}",
                verdict,
            )
        print_table(t)
    if failed and exit_on_failure:
        raise typer.Exit(1)
    return {"ok": not failed, "json": rows}
