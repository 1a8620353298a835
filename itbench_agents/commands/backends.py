"""``itbench backends list|check``: the backends that can serve an episode's cluster
(``harness/backends.py``) and the kit each must pass (``harness/backend_check.py``);
``itbench executors list``: what can run a batch's episodes (``harness/executor_registry.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..plugins import NamedTargets, PluginError

backends_app = typer.Typer(help="Backends that serve the cluster (the twin, plug-ins).", no_args_is_help=True)
executors_app = typer.Typer(
    help="Executors that run a batch's episodes (in-process, processes, plug-ins).", no_args_is_help=True
)


@backends_app.command("list")
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON", envvar="ITBENCH_JSON")] = False,
) -> None:
    """List the backends (built-in and installed plug-ins) and whether each loads here."""
    from ..harness.backends import REGISTRY

    _list_named(REGISTRY, "backends", as_json)


@executors_app.command("list")
def executors_list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON", envvar="ITBENCH_JSON")] = False,
) -> None:
    """List the executors (built-in and installed plug-ins) and whether each loads here."""
    from ..harness.executor_registry import REGISTRY

    _list_named(REGISTRY, "executors", as_json)


def _list_named(registry: NamedTargets, title: str, as_json: bool) -> None:
    from rich.table import Table

    from ..console import print_table

    rows = []
    for e in registry.entries():
        try:
            registry.entry(e.name, load=True)
            problem = ""
        except PluginError as err:
            problem = str(err)
        rows.append(
            {
                "name": e.name,
                "target": e.target,
                "source": e.source,
                "available": not problem,
                "error": problem,
            }
        )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title=title)
    for c in ("name", "available", "source", "target"):
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(
            str(r["name"]),
            "yes" if r["available"] else f"no: {r['error']}",
            str(r["source"]),
            str(r["target"]),
        )
    print_table(t)


@backends_app.command("check")
def check_cmd(
    name: Annotated[
        str, typer.Argument(help="a backend's name (itbench backends list) or module:attribute")
    ] = "twin",
    app: Annotated[
        list[str] | None, typer.Option("--app", help="app(s) to provision (default: chain)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON", envvar="ITBENCH_JSON")] = False,
    endpoints: Annotated[
        Path | None,
        typer.Option(
            help="live: the cluster's endpoints file (docs/live-cluster.md)", envvar="ITBENCH_LIVE_ENDPOINTS"
        ),
    ] = None,
) -> None:
    """Run the backend kit (check_backend) on fresh backends: exit 0 when every check passes."""
    import os

    from ..harness.backend_check import check_backend
    from ..harness.backends import UnknownBackendError, backend_entry, make_backend
    from ..harness.live_backend import ENDPOINTS_ENV

    if endpoints is not None:
        os.environ[ENDPOINTS_ENV] = str(endpoints.resolve())
    try:
        backend_entry(name, load=True)
    except (UnknownBackendError, PluginError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    reports = [check_backend(lambda: make_backend(name), app=a) for a in (app or ["chain"])]
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "backend": r.backend,
                        "app": r.app,
                        "ok": r.ok,
                        "wall_s": round(r.wall_s, 3),
                        "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in r.checks],
                    }
                    for r in reports
                ],
                indent=2,
            )
        )
    else:
        for r in reports:
            print(r.render())
    if not all(r.ok for r in reports):
        raise typer.Exit(1)


@backends_app.command("probe-agreement")
def probe_agreement_cmd(
    suite: Annotated[
        str, typer.Option("--suite", help="scenarios of this suite (sre, sre:flagd, ...)")
    ] = "sre",
    scenario: Annotated[
        list[str] | None, typer.Option("--scenario", "-s", help="only these scenarios")
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of each scenario's twin")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON", envvar="ITBENCH_JSON")] = False,
) -> None:
    """Does the wire probe (HTTP through the service proxy, consumer lag in Prometheus) agree with the
    twin's own probe of the user journeys? Each scenario with its fault in place, then mitigated."""
    from rich.progress import track

    from ..harness.catalogue import Catalogue
    from ..harness.probe_agreement import probe_agreement
    from ..scenario.spec import Scenario

    chosen = [
        s
        for s in Catalogue.default().select(ids=scenario or [], suite=suite, tags=[])
        if isinstance(s, Scenario)
    ]
    if not chosen:
        typer.echo("error: no twin scenario matches", err=True)
        raise typer.Exit(2)
    results = [probe_agreement(s, seed=seed) for s in track(chosen, description="probing", transient=True)]
    total = agree = 0
    rows = []
    for r in results:
        for c in r.comparisons:
            total += len(c.own)
            agree += len(c.own) - len(c.disagreements)
            for name in c.disagreements:
                own, wire = c.details.get(name, ("", ""))
                rows.append(
                    {
                        "scenario": r.scenario,
                        "state": c.state,
                        "journey": name,
                        "own": c.own[name],
                        "own_detail": own,
                        "wire_detail": wire,
                    }
                )
    errors = {r.scenario: r.error for r in results if r.error}
    if as_json:
        print(
            json.dumps({"journeys": total, "agree": agree, "disagreements": rows, "errors": errors}, indent=2)
        )
    else:
        for row in rows:
            typer.echo(
                f"{row['scenario']} [{row['state']}] {row['journey']}: own {'ok' if row['own'] else 'FAIL'} "
                f"({row['own_detail']}) / wire ({row['wire_detail']})"
            )
        for sid, err in errors.items():
            typer.echo(f"{sid}: did not run: {err}")
        typer.echo(
            f"agreement: {agree}/{total} journey verdicts over {len(results)} scenario(s) "
            f"(fault in place and mitigated); {len(errors)} did not run"
        )
    raise typer.Exit(0 if agree == total and not errors else 1)
