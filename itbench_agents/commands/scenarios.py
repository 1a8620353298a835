"""``itbench scenarios list|show|validate|audit``."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

scenarios_app = typer.Typer(help="List, show and validate scenarios.", no_args_is_help=True)


ScenariosDirOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--scenarios-dir",
        help="a folder of your own scenarios (<dir>/sre/*.yaml or <dir>/*.yaml), loaded beside the "
        "library (repeatable; also ITBENCH_SCENARIO_PATH)",
    ),
]


def use_scenario_dirs(dirs: list[Path] | None) -> None:
    """Load the scenarios of ``dirs`` too, here and in the processes this command starts."""
    if dirs:
        from ..scenario.registry import add_scenario_dirs

        add_scenario_dirs(dirs)


def _chosen(ids: list[str] | None, all_: bool) -> list[Any]:
    """The scenarios named on the command line (or every one with ``--all``); exit 2 otherwise."""
    from ..scenario.registry import UnknownScenarioError

    if not ids and not all_:
        typer.echo("error: name scenario ids or pass --all", err=True)
        raise typer.Exit(2)
    reg = _registry()
    try:
        return list(reg.all() if all_ else reg.select(ids=ids or []))
    except UnknownScenarioError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None


def _persona_ids(persona: str, ids: list[str] | None) -> list[str]:
    """The ids of the persona's scenarios of the SRE format (``finops``: its cost incidents) that
    ``ids`` name (exact ids or globs, with or without the persona prefix); every one without ids."""
    import fnmatch

    known = [x.id for x in _registry().all() if x.persona == persona]
    return [
        sid
        for sid in known
        if not ids
        or any(fnmatch.fnmatchcase(sid, q) or fnmatch.fnmatchcase(sid, f"{persona}/{q}") for q in ids)
    ]


def _anomaly_only(anomaly_report: dict[str, Any], as_json: bool, twin: Any) -> None:
    """A ``--suite finops`` command whose ids name no cost incident: the anomaly part's verdict."""
    if as_json:
        print(json.dumps({"anomaly": anomaly_report["json"], "twin": twin}, indent=2))
    if not anomaly_report["ok"]:
        raise typer.Exit(1)


def _registry():  # type: ignore[no-untyped-def]
    from rich.console import Console

    from ..scenario.loader import ScenarioLoadError
    from ..scenario.registry import ScenarioRegistry

    try:
        return ScenarioRegistry.default()
    except ScenarioLoadError as e:
        Console(stderr=True).print(
            f"[red]scenario library does not load:[/red]\n{e}", markup=True, highlight=False
        )
        raise typer.Exit(2) from None


@scenarios_app.command("list")
def list_cmd(
    suite: Annotated[
        str | None, typer.Option(help="persona or persona:tag, e.g. sre or sre:flagd", envvar="ITBENCH_SUITE")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="only scenarios with this tag (repeatable)", envvar="ITBENCH_TAG"),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print JSON instead of a table", envvar="ITBENCH_JSON")
    ] = False,
    scenarios_dir: ScenariosDirOption = None,
) -> None:
    """List scenarios: id, app, category, complexity bucket, expected alerts."""
    use_scenario_dirs(scenarios_dir)
    if suite is not None and suite.split(":")[0] == "ciso":
        from ..personas.ciso.cli import list_ciso

        list_ciso(as_json)
        return
    if suite is not None and suite.split(":")[0] == "finops":
        from ..personas.finops.cli import list_finops

        list_finops(as_json)
        return
    if suite is not None and suite.split(":")[0] not in ("sre", "ciso", "finops"):
        _list_other_persona(suite, tag or [], as_json)
        return
    from ..personas.sre.cli import list_twin

    list_twin(_registry().select(suite=suite, tags=tag or []), as_json)


def _list_other_persona(suite: str, tags: list[str], as_json: bool) -> None:
    """``list --suite`` of a plug-in persona: its library's scenarios, with what their records say."""
    from rich.table import Table

    from ..console import print_table
    from ..harness.catalogue import Catalogue
    from ..harness.personas import get_persona
    from ..scenario.registry import ScenarioSelectionError, UnknownScenarioError

    try:
        chosen = Catalogue.default().select(suite=suite, tags=tags)
    except (UnknownScenarioError, ScenarioSelectionError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    rows = [
        {"id": s.id, "persona": s.persona, **get_persona(s.persona).record_fields(s), "tags": list(s.tags)}
        for s in chosen
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title=f"{len(rows)} scenarios")
    for col in ("id", "category", "bucket", "tags"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["id"], str(r.get("category", "")), str(r.get("bucket", "")), ", ".join(r["tags"]))
    print_table(t)


@scenarios_app.command("show")
def show_cmd(
    scenario_id: Annotated[
        str, typer.Argument(help="scenario id, e.g. sre/ad-failure-flag-v1 or ciso/rhel-opa-aslr-v1")
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="print the parsed scenario as JSON", envvar="ITBENCH_JSON")
    ] = False,
    scenarios_dir: ScenariosDirOption = None,
) -> None:
    """Show one scenario (its file, or the parsed model as JSON)."""
    use_scenario_dirs(scenarios_dir)
    if scenario_id.startswith("ciso/"):
        from ..personas.ciso.cli import show_ciso

        show_ciso(scenario_id, as_json)
        return
    if scenario_id.startswith("finops/"):
        from ..personas.finops.cli import show_finops

        if show_finops(scenario_id, as_json):
            return
    from ..scenario.registry import UnknownScenarioError

    if scenario_id.split("/")[0] not in ("sre", "ciso", "finops"):  # a plug-in persona's?
        from ..harness.catalogue import Catalogue

        with contextlib.suppress(UnknownScenarioError):
            found = Catalogue.default().get(scenario_id)
            if found.persona not in ("sre", "ciso", "finops") and hasattr(found, "model_dump_json"):
                print(found.model_dump_json(indent=2))
                return
    reg = _registry()
    try:
        s = reg.get(scenario_id)
    except UnknownScenarioError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        print(s.model_dump_json(indent=2))
        return
    print(f"# complexity {s.complexity:.2f} ({s.complexity_bucket}); category {s.category}")
    print(reg.files[s.id].read_text())


@scenarios_app.command("validate")
def validate_cmd(
    ids: Annotated[list[str] | None, typer.Argument(help="scenario ids or globs")] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="validate the whole library", envvar="ITBENCH_VALIDATE_ALL")
    ] = False,
    jobs: Annotated[int, typer.Option(help="parallel processes", envvar="ITBENCH_JOBS")] = 1,
    seed: Annotated[int, typer.Option(help="twin seed", envvar="ITBENCH_SEED")] = 0,
    history_s: Annotated[
        float, typer.Option(help="twin pre-history in seconds", envvar="ITBENCH_HISTORY_S")
    ] = 600.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="print results as JSON", envvar="ITBENCH_JSON")
    ] = False,
    churn: Annotated[
        str,
        typer.Option(
            help="benign churn around the fault: default (seeded 1-3 changes) or none", envvar="ITBENCH_CHURN"
        ),
    ] = "default",
    scenarios_dir: ScenariosDirOption = None,
    suite: Annotated[
        str | None,
        typer.Option(
            help="validate a persona's suite: sre (every SRE scenario), ciso or finops (--all: every "
            "scenario of the SRE format, FinOps cost incidents included)",
            envvar="ITBENCH_SUITE",
        ),
    ] = None,
) -> None:
    """Prove scenarios on the twin: healthy before, alerts fire, mitigation clears them, entities exist
    (CISO: the reference policy detects the violation and passes the compliant workload)."""
    use_scenario_dirs(scenarios_dir)
    if suite == "ciso":
        from ..personas.ciso.cli import validate_ciso_suite

        validate_ciso_suite(ids or [], as_json, seed, jobs)
        return
    anomaly_report: Any = None
    if suite == "finops":  # the anomaly library here, then the scenarios on the twin below
        from ..personas.finops.cli import validate_finops_suite

        anomaly_report = validate_finops_suite(ids or [], as_json, exit_on_failure=False, twin_ids=True)
        ids = _persona_ids("finops", ids)
        if not ids:
            _anomaly_only(anomaly_report, as_json, [])
            return
    elif suite == "sre":  # the SRE scenarios (FinOps cost incidents share the format, not the suite)
        ids = _persona_ids("sre", ids)
        if not ids:
            typer.echo("error: no SRE scenario matches", err=True)
            raise typer.Exit(2)
    elif suite is not None:
        typer.echo(f"error: --suite must be sre, ciso or finops, got {suite!r}", err=True)
        raise typer.Exit(2)
    from ..harness.churn import CHURN_MODES
    from ..personas.sre.cli import validate_twin

    scenarios = _chosen(ids, all_)
    if churn not in CHURN_MODES:
        typer.echo(f"error: --churn must be one of {', '.join(CHURN_MODES)}, got {churn!r}", err=True)
        raise typer.Exit(2)
    validate_twin(scenarios, seed, history_s, churn, jobs, as_json, anomaly_report)


@scenarios_app.command("audit")
def audit_cmd(
    ids: Annotated[list[str] | None, typer.Argument(help="scenario ids or globs")] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="audit the whole library", envvar="ITBENCH_AUDIT_ALL")
    ] = False,
    strategy: Annotated[
        list[str] | None,
        typer.Option(
            "--strategy",
            help="strategy (agent name) to run; repeatable (default: the judged ones, see --reported)",
        ),
    ] = None,
    reported: Annotated[
        bool,
        typer.Option(
            "--reported",
            help="also run the strategies that are reported, not judged (restart everything, shotgun "
            "diagnosis, the alerting service as root cause, change detection, undo every change)",
        ),
    ] = False,
    jobs: Annotated[int, typer.Option(help="parallel episodes", envvar="ITBENCH_JOBS")] = 1,
    history_s: Annotated[
        float, typer.Option(help="twin pre-history in seconds", envvar="ITBENCH_HISTORY_S")
    ] = 600.0,
    run_dir: Annotated[
        str | None,
        typer.Option(help="keep the run folder here (default: a temporary folder, removed after)"),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="print the per-scenario table")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="print results as JSON", envvar="ITBENCH_JSON")
    ] = False,
    scenarios_dir: ScenariosDirOption = None,
    suite: Annotated[
        str | None,
        typer.Option(
            help="ciso: audit the CISO scenarios with their own blind strategies (judged on the strict "
            "column); finops: the anomaly scenarios with theirs (judged on pinpointed), then the cost "
            "incidents on the twin with the FinOps strategies (blind cost cutters, silencing the cost "
            "alerts, scaling to zero); default: the SRE library",
            envvar="ITBENCH_SUITE",
        ),
    ] = None,
) -> None:
    """Run naive and destructive strategies on scenarios; fail if a destructive one mitigates anything.

    By default it runs the strategies it judges (noop, the oracle, the destructive and the blind
    ones); --reported adds the others, whose numbers it only prints.
    Prints, per strategy, how many scenarios it passes diagnosis and mitigation on, and on how
    many its agent carried out at least one change ("acted": a strategy that never acts proves
    nothing) (and with
    --verbose, per scenario: ✓/✗ for diagnosis then mitigation, · = not applicable, E = error).
    Exits 1 when a destructive strategy or noop passes mitigation, or the oracle fails, anywhere.
    """
    use_scenario_dirs(scenarios_dir)
    if suite == "ciso":
        from ..personas.ciso.cli import audit_ciso_suite

        audit_ciso_suite(ids or [], strategy or [], jobs, run_dir, as_json)
        return
    anomaly_report: Any = None
    if suite == "finops":  # the anomaly library here, then the cost incidents on the twin below
        from ..personas.finops.cli import audit_finops_suite
        from ..personas.sre.audit import FINOPS_STRATEGIES

        anomaly_report = audit_finops_suite(ids or [], as_json, exit_on_failure=False, twin_ids=True)
        ids = _persona_ids("finops", ids)
        if not ids:
            _anomaly_only(anomaly_report, as_json, None)
            return
        strategy = strategy or list(FINOPS_STRATEGIES)
    elif suite not in (None, "sre"):
        typer.echo(f"error: --suite must be sre, ciso or finops, got {suite!r}", err=True)
        raise typer.Exit(2)
    from ..agents.registry import UnknownAgentError, entry
    from ..personas.sre.audit import chosen_strategies
    from ..personas.sre.cli import audit_twin

    scenarios = _chosen(ids, all_)
    strategies = chosen_strategies(strategy, reported)
    for s in strategies:
        try:
            entry(s)
        except UnknownAgentError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
    audit_twin(scenarios, strategies, jobs, history_s, run_dir, verbose, as_json, anomaly_report)
