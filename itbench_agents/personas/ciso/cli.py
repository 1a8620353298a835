"""The CISO parts of ``itbench scenarios list|validate|audit --suite ciso`` (the scenarios CLI hands
``ciso`` suites to these)."""

from __future__ import annotations

import json

import typer


def _library():  # type: ignore[no-untyped-def]
    from rich.console import Console

    from ...scenario.loader import ScenarioLoadError
    from .library import ciso_library

    try:
        return ciso_library()
    except ScenarioLoadError as e:
        Console(stderr=True).print(
            f"[red]CISO scenario library does not load:[/red]\n{e}", markup=True, highlight=False
        )
        raise typer.Exit(2) from None


def show_ciso(scenario_id: str, as_json: bool) -> None:
    """``itbench scenarios show ciso/...``: the scenario's file (reference answers included, as for
    SRE scenarios), or the parsed model as JSON."""
    from .library import ciso_dirs, load_ciso

    name = scenario_id.split("/", 1)[-1]
    files = [f for d in ciso_dirs() for f in sorted(d.glob(f"*/{name}.yaml"))]
    if not files:
        known = sorted(s.id for s in _library())
        typer.echo(f"error: unknown CISO scenario {scenario_id!r} (see `itbench scenarios list --suite ciso`; "
                   f"{len(known)} known)", err=True)  # fmt: skip
        raise typer.Exit(2)
    scenario = load_ciso(files[0])
    if as_json:
        print(scenario.model_dump_json(indent=2, by_alias=True, exclude_none=True))
        return
    print(f"# class {scenario.task_class}; CIS {', '.join(scenario.cis)}; complexity {scenario.complexity}")
    print(files[0].read_text())


def list_ciso(as_json: bool) -> None:
    from rich.table import Table

    from ...console import print_table

    scenarios = _library()
    rows = [
        {
            "id": s.id,
            "class": s.task_class,
            "cis": s.cis,
            "namespace": s.namespace,
            "workloads": [f"{k}/{n}" for _, k, _, n in s.targets()],
            "complexity": s.complexity,
        }
        for s in scenarios
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title=f"{len(rows)} scenarios")
    for col in ("id", "class", "CIS", "namespace", "workloads", "complexity"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(
            r["id"],
            r["class"],
            ", ".join(r["cis"]),
            r["namespace"],
            ", ".join(r["workloads"]),
            r["complexity"],
        )
    print_table(t)


def validate_ciso_suite(ids: list[str], as_json: bool, seed: int, jobs: int = 1) -> None:
    from concurrent.futures import ProcessPoolExecutor
    from fnmatch import fnmatchcase
    from functools import partial

    from rich.console import Console

    from .validate import validate_ciso

    scenarios = [s for s in _library() if not ids or any(fnmatchcase(s.id, q) for q in ids)]
    if ids and not scenarios:
        typer.echo(f"error: no CISO scenario matches {', '.join(ids)}", err=True)
        raise typer.Exit(2)
    console = Console(stderr=True)
    results = []
    if jobs > 1:  # each scenario in its own process (rhel-opa validations mostly wait on playbooks)
        with ProcessPoolExecutor(jobs) as pool:
            for i, r in enumerate(pool.map(partial(validate_ciso, seed=seed), scenarios), 1):
                console.print(f"validated {i}/{len(scenarios)} {r.scenario_id}", highlight=False)
                results.append(r)
    else:
        for i, s in enumerate(scenarios, 1):
            console.print(f"validate {i}/{len(scenarios)} {s.id}", highlight=False)
            results.append(validate_ciso(s, seed=seed))
    if as_json:
        print(
            json.dumps(
                [
                    {"id": r.scenario_id, "ok": r.ok, "checks": [c.__dict__ for c in r.checks]}
                    for r in results
                ],
                indent=2,
            )
        )
    else:
        for r in results:
            print(f"{'ok  ' if r.ok else 'FAIL'} {r.scenario_id}")
            for c in r.checks:
                if not c.ok:
                    print(f"       ✗ {c.name}: {c.detail}")
        print(f"{sum(r.ok for r in results)}/{len(results)} scenarios valid")
    if not all(r.ok for r in results):
        raise typer.Exit(1)


def audit_ciso_suite(
    ids: list[str], strategies: list[str], jobs: int, run_dir: str | None, as_json: bool
) -> None:
    import shutil
    import tempfile
    from fnmatch import fnmatchcase

    from rich.console import Console
    from rich.table import Table

    from ...console import table_console
    from .audit import ALL_STRATEGIES, REFERENCE, run_ciso_audit

    scenarios = [s for s in _library() if not ids or any(fnmatchcase(s.id, q) for q in ids)]
    if ids and not scenarios:
        typer.echo(f"error: no CISO scenario matches {', '.join(ids)}", err=True)
        raise typer.Exit(2)
    names = [n.removeprefix("audit-ciso-") for n in strategies] or [*REFERENCE, *ALL_STRATEGIES]
    unknown = [n for n in names if n not in ALL_STRATEGIES and n not in REFERENCE]
    if unknown:
        known = ", ".join([*REFERENCE, *ALL_STRATEGIES])
        typer.echo(f"error: unknown CISO audit strategy {', '.join(unknown)} (known: {known})", err=True)
        raise typer.Exit(2)
    err = Console(stderr=True)
    folder = run_dir or tempfile.mkdtemp(prefix="itbench-ciso-audit-")
    done = 0

    def progress(rec) -> None:  # type: ignore[no-untyped-def]
        nonlocal done
        done += 1
        if not as_json and err.is_terminal:
            err.print(f"[{done}] {rec.agent} {rec.scenario_id}: {rec.termination}", highlight=False)

    try:
        res = run_ciso_audit([s.id for s in scenarios], names, folder, jobs=jobs, on_record=progress)
    finally:
        if run_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    rows = [
        {
            "strategy": n,
            "judged as": "reference" if n in REFERENCE else "blind",
            "scenarios": len(t.applicable),
            "detected (paper's pass)": len(t.detected),
            "strict": len(t.strict),
            "errors": len(t.errors),
        }
        for n, t in res.tallies.items()
    ]
    if as_json:
        print(json.dumps({"strategies": rows, "problems": res.problems()}, indent=2))
    else:
        t = Table(title=f"CISO audit: {len(scenarios)} scenario(s), {len(names)} strategies")
        for col in rows[0] if rows else ():
            t.add_column(col)
        for r in rows:
            t.add_row(*(str(v) for v in r.values()))
        table_console().print(t)
    for p in res.problems():
        err.print(f"[red]✗[/red] {p}", highlight=False, soft_wrap=True)
    if not as_json:
        err.print(
            f"{len(res.problems())} violation(s)" if res.problems() else "no violation", highlight=False
        )
    if not res.ok:
        raise typer.Exit(1)
