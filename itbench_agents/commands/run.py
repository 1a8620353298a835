"""CLI commands of the harness: ``itbench run``, ``score``, ``report``, ``agents list``.

Every option can also be set through an environment variable (``ITBENCH_*``, shown in ``--help``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from ..harness.records import AgentSpec, RunConfig

agents_app = typer.Typer(help="Agents the harness can run.", no_args_is_help=True)


@agents_app.command("list")
def agents_list(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON", envvar="ITBENCH_JSON")] = False,
) -> None:
    """List the agents (built-in and installed plug-ins) and whether each can be imported here."""
    import json

    from rich.table import Table

    from ..agents.registry import available, entries
    from ..console import print_table

    rows: list[dict[str, str | bool]] = [
        {
            "name": e.name,
            "target": e.target,
            "available": available(e.name),
            "needs_model": e.needs_model,
            "extra": e.extra or "",
            "description": e.load_error or e.description,
            "source": e.source,
        }
        for e in entries()
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title="agents")
    for c in ("name", "available", "needs --model", "source", "description"):
        t.add_column(c)
    for r in rows:
        t.add_row(
            str(r["name"]),
            "yes" if r["available"] else (f"no: needs itbench-agents[{r['extra']}]" if r["extra"] else "no"),
            "yes" if r["needs_model"] else "",
            str(r["source"]),
            str(r["description"]),
        )
    print_table(t)


def _fail(msg: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {msg}", err=True)
    return typer.Exit(code)


def _churn(value: str):  # type: ignore[no-untyped-def]
    from ..harness.churn import churn_mode

    try:
        return churn_mode(value)
    except ValueError as e:
        raise _fail(str(e)) from None


def run_cmd(
    suite: Annotated[
        str | None,
        typer.Option(
            help="run a whole suite: a persona (sre, ciso, finops, a plug-in's) or persona:tag (sre:flagd, ciso:kyverno-update)",
            envvar="ITBENCH_SUITE",
        ),
    ] = None,
    scenario: Annotated[
        list[str] | None,
        typer.Option(
            "--scenario",
            "-s",
            help="scenario id or glob (repeatable); with --suite, narrows it",
            envvar="ITBENCH_SCENARIO",
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="keep scenarios with this tag (repeatable)", envvar="ITBENCH_TAG"),
    ] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent", "-a", help="agent name (repeatable; see `itbench agents list`)", envvar="ITBENCH_AGENT"
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="model for LLM agents (litellm string, scripted:FILE)", envvar="ITBENCH_MODEL"),
    ] = None,
    command: Annotated[
        str | None,
        typer.Option(
            help="program for the `command` agent (a shell-quoted string)", envvar="ITBENCH_AGENT_COMMAND"
        ),
    ] = None,
    tool_model: Annotated[
        str | None,
        typer.Option(help="model for the NL2* tools (default: --model)", envvar="ITBENCH_TOOL_MODEL"),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="OpenAI-compatible base URL (vLLM, Ollama...)", envvar="ITBENCH_BASE_URL"),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="name of the environment variable holding the API key", envvar="ITBENCH_API_KEY_ENV"
        ),
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            help="agent tools: direct or nl2 (the paper's NL2* tools), plus registered tools by name: "
            "direct,+runbook (see `itbench tools list`)",
            envvar="ITBENCH_TOOLS",
        ),
    ] = "direct",
    temperature: Annotated[
        float, typer.Option(help="sampling temperature", envvar="ITBENCH_TEMPERATURE")
    ] = 0.0,
    record_dir: Annotated[
        Path | None, typer.Option(help="record model calls here (for replay)", envvar="ITBENCH_RECORD_DIR")
    ] = None,
    replay_dir: Annotated[
        Path | None,
        typer.Option(
            help="replay recorded model calls from here (no API calls)", envvar="ITBENCH_REPLAY_DIR"
        ),
    ] = None,
    agent_option: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-option", help="KEY=VALUE passed to the agent (repeatable)", envvar="ITBENCH_AGENT_OPTION"
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            help="how each --agent appears in tables and episode names (repeatable: one per --agent, in order)",
        ),
    ] = None,
    sandbox: Annotated[
        str,
        typer.Option(
            help="command agents: auto (bubblewrap when it works here, a loud warning where not), "
            "require (refuse to run without it; also spelled bwrap) or none",
            envvar="ITBENCH_SANDBOX",
        ),
    ] = "auto",
    sandbox_bind: Annotated[
        list[str] | None,
        typer.Option(
            "--sandbox-bind",
            help="command agents: a folder bound read-only into the sandbox (repeatable)",
            envvar="ITBENCH_SANDBOX_BIND",
        ),
    ] = None,
    trials: Annotated[
        int, typer.Option(help="trials per scenario and agent", envvar="ITBENCH_TRIALS", min=1)
    ] = 1,
    concurrency: Annotated[
        int, typer.Option(help="episodes run in parallel (processes)", envvar="ITBENCH_CONCURRENCY", min=1)
    ] = 1,
    mask: Annotated[
        list[str] | None,
        typer.Option(
            "--mask",
            help="observability to hide from agents: traces (the paper's traces-off condition)",
            envvar="ITBENCH_MASK",
        ),
    ] = None,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            help="run folder (default: RUNS_DIR/<timestamp>); rerunning the same command on it resumes",
            envvar="ITBENCH_RUN_DIR",
        ),
    ] = None,
    runs_dir: Annotated[
        Path, typer.Option(help="where new run folders go", envvar="ITBENCH_RUNS_DIR")
    ] = Path("runs"),
    resume: Annotated[
        Path | None,
        typer.Option(help="resume this run folder with its own saved config", envvar="ITBENCH_RESUME"),
    ] = None,
    scenarios_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--scenarios-dir",
            help="a folder of your own scenarios (<dir>/sre/*.yaml or <dir>/*.yaml), loaded beside the "
            "library (repeatable; also ITBENCH_SCENARIO_PATH); saved in the run, so --resume finds them",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="base seed (per-trial seeds derive from it)", envvar="ITBENCH_SEED")
    ] = 0,
    max_steps: Annotated[
        int, typer.Option(help="max agent steps (tool calls)", envvar="ITBENCH_MAX_STEPS")
    ] = 50,
    wall_time: Annotated[
        float, typer.Option(help="max agent wall seconds", envvar="ITBENCH_WALL_TIME_S")
    ] = 900.0,
    max_tokens: Annotated[
        int | None, typer.Option(help="max tokens per episode", envvar="ITBENCH_MAX_TOKENS")
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option(help="max USD per episode", envvar="ITBENCH_MAX_COST_USD")
    ] = None,
    history_s: Annotated[
        float,
        typer.Option(
            help="twin pre-history seconds (--backend live: how old the app's namespace must be)",
            envvar="ITBENCH_HISTORY_S",
        ),
    ] = 3600.0,
    settle_s: Annotated[
        float | None,
        typer.Option(
            help="override every scenario's settle period (twin seconds)", envvar="ITBENCH_SETTLE_S"
        ),
    ] = None,
    environment: Annotated[
        str,
        typer.Option(
            help="the episode's environment: twin, or module:factory (a whole lifecycle of your own)",
            envvar="ITBENCH_ENVIRONMENT",
        ),
    ] = "twin",
    backend: Annotated[
        str,
        typer.Option(
            help="what serves the cluster: twin, a plug-in backend's name (itbench backends list), or module:attribute",
            envvar="ITBENCH_BACKEND",
        ),
    ] = "twin",
    endpoints: Annotated[
        Path | None,
        typer.Option(
            help="--backend live: the cluster's endpoints file (kubeconfig, prometheus_url, loki_url, jaeger_url; "
            "docs/live-cluster.md); the live backend also reads $ITBENCH_LIVE_ENDPOINTS",
        ),
    ] = None,
    snapshots: Annotated[
        Path | None,
        typer.Option(
            help="score diagnoses on recorded snapshots (`itbench snapshot record`) instead of the twin: "
            "every scenario recorded under this folder, or those of --scenario/--suite that are",
            envvar="ITBENCH_SNAPSHOTS",
        ),
    ] = None,
    record_snapshots: Annotated[
        bool,
        typer.Option(
            "--record-snapshots",
            help="record each SRE episode's observable state at the start of the agent's turn into "
            "episodes/<id>/snapshot (ITBench-Lite's layout, 85-160 MB each; docs/snapshots.md)",
            envvar="ITBENCH_RECORD_SNAPSHOTS",
        ),
    ] = False,
    executor: Annotated[
        str | None,
        typer.Option(
            help="how episodes run: in-process, processes, processes-shipped, ray, a plug-in's name (itbench executors list) or module:attribute; default: in-process at --concurrency 1, processes above",
            envvar="ITBENCH_EXECUTOR",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="with --executor ray: the Ray cluster to run on (e.g. ray://head:10001 or auto); default: $RAY_ADDRESS, else a local Ray with --concurrency CPUs",
            envvar="ITBENCH_RAY_ADDRESS",
        ),
    ] = None,
    churn: Annotated[
        str,
        typer.Option(
            help="benign churn around each fault: default (seeded 1-3 changes) or none",
            envvar="ITBENCH_CHURN",
        ),
    ] = "default",
    share_preparation: Annotated[
        bool,
        typer.Option(
            "--share-preparation/--no-share-preparation",
            help="the agents of a twin scenario (same trial and seed) start from one preparation — deploy, "
            "baseline, faults, alert wait — each in a process forked from it: the same start, prepared once; "
            "with worker processes (--concurrency 2 or more, --executor processes), where it leaves none idle",
            envvar="ITBENCH_SHARE_PREPARATION",
        ),
    ] = True,
    fail_fast: Annotated[
        bool,
        typer.Option(
            "--fail-fast/--no-fail-fast",
            help="stop after the first episode that did not end in a submission",
            envvar="ITBENCH_FAIL_FAST",
        ),
    ] = False,
    retry_errors: Annotated[
        bool,
        typer.Option(
            help="on resume, rerun episodes that ended in env/harness errors", envvar="ITBENCH_RETRY_ERRORS"
        ),
    ] = False,
    report: Annotated[
        bool,
        typer.Option(
            "--report/--no-report", help="write report.md and report.html at the end", envvar="ITBENCH_REPORT"
        ),
    ] = True,
) -> None:
    """Run agents on scenarios: scenarios × trials × agents, resumable after a crash."""
    import shlex

    from rich.console import Console

    from ..agents.registry import UnknownAgentError, entry
    from ..core.task import Limits
    from ..harness.batch import (
        BatchInterrupted,
        done_keys,
        interrupt_on_signals,
        new_run_id,
        run_batch,
        start_run,
    )
    from ..harness.catalogue import Catalogue
    from ..harness.progress import BatchProgress
    from ..harness.records import AgentSpec, RunConfig
    from ..harness.runfolder import RunFolderError, read_manifest
    from ..sandbox import SANDBOX_MODES
    from ..scenario.loader import ScenarioLoadError
    from ..scenario.registry import (
        ScenarioSelectionError,
        UnknownScenarioError,
        add_scenario_dirs,
    )

    console = Console(stderr=True)
    if resume is not None:
        try:
            resumed_config = read_manifest(resume).config
        except RunFolderError as e:
            raise _fail(str(e)) from None
        add_scenario_dirs(resumed_config.scenario_dirs)  # the run's own scenario folders
    extra_dirs = add_scenario_dirs(scenarios_dir or [])
    try:
        registry = Catalogue.default()
    except ScenarioLoadError as e:
        raise _fail(f"scenario library does not load:\n{e}") from None
    try:
        if resume is not None:
            config = resumed_config
            folder = resume
            if config.backend == "live":  # the cluster answers again (--endpoints, or its variable)
                _check_live([], endpoints)
            if config.snapshots is not None:  # the episodes' processes find the folder again
                _snapshots_of(Path(config.snapshots))
        else:
            recorded = _snapshots_of(snapshots) if snapshots is not None else None
            if recorded is not None and not suite and not scenario:
                scenario = sorted(recorded)
            if not suite and not scenario:
                raise _fail("choose scenarios with --suite or --scenario")
            if not agent:
                raise _fail("choose at least one --agent (see `itbench agents list`)")
            for m in mask or []:
                if m not in ("traces", "logs", "metrics"):
                    raise _fail(f"--mask {m!r}: expected traces, logs or metrics")
            from ..tools.toolsets import ToolSelectionError, check_tools

            try:
                check_tools(tools)
            except ToolSelectionError as e:
                raise _fail(str(e)) from None
            options: dict[str, str] = {}
            for kv in agent_option or []:
                key, sep, value = kv.partition("=")
                if not sep or not key:
                    raise _fail(f"--agent-option {kv!r}: expected KEY=VALUE")
                options[key] = value
            if sandbox not in SANDBOX_MODES:
                raise _fail(f"--sandbox {sandbox!r}: expected auto, require, bwrap or none")
            extra: dict[str, object] = {"tools": tools, "temperature": temperature}
            if "command" in agent:
                from ..sandbox import SandboxUnavailable, resolve_mode

                try:
                    resolve_mode(sandbox)  # type: ignore[arg-type]
                except SandboxUnavailable as e:
                    raise _fail(str(e)) from None
                binds = [str(Path(b).resolve()) for b in sandbox_bind or []]
                for b in binds:
                    if not Path(b).exists():
                        raise _fail(f"--sandbox-bind {b}: no such file or folder")
                extra.update({"sandbox": sandbox, "sandbox_bind": binds})
            for k, v in (
                ("tool_model", tool_model),
                ("base_url", base_url),
                ("api_key_env", api_key_env),
                ("record_dir", record_dir),
                ("replay_dir", replay_dir),
            ):
                if v is not None:
                    extra[k] = str(v)
            labels = list(label or [])
            if labels and len(labels) != len(agent):
                raise _fail(
                    f"--label: {len(labels)} given for {len(agent)} agent(s) (one per --agent, in order)"
                )
            if any(not lb.strip() for lb in labels):
                raise _fail("--label: a label cannot be empty")
            specs = []
            for i, name in enumerate(agent):
                ent = entry(name)
                if ent.load_error:
                    raise _fail(ent.load_error)
                if ent.needs_model and not model:
                    raise _fail(f"agent {name!r} needs --model")
                # a built-in agent without a model (noop, oracle, the heuristics) is not named after
                # the --model its neighbours in the run use; plug-ins may use one: they keep it
                uses_model = ent.needs_model or ent.source != "built-in"
                specs.append(
                    AgentSpec(
                        name=name,
                        model=model if uses_model else None,
                        label=labels[i].strip() if labels else None,
                        command=shlex.split(command) if command else None,
                        options=options,
                        config=extra,
                    )
                )
            _check_labels(specs)
            if "command" in agent and not command:
                raise _fail("the command agent needs --command 'PROGRAM ARGS'")
            _preflight(specs)
            chosen = registry.select(ids=scenario or [], suite=suite, tags=tag or [])
            if not chosen:
                raise _fail("no scenario matches")
            for name in dict.fromkeys(agent):
                works_on = entry(name).personas
                other = sorted({s.persona for s in chosen} - set(works_on)) if works_on else []
                if other:
                    raise _fail(
                        f"agent {name!r} works on {' and '.join(works_on)} scenarios; the chosen ones include "
                        f"{' and '.join(other)} scenarios (choose with --suite {works_on[0]})"
                    )
            if recorded is not None:
                if backend != "twin" or environment != "twin":
                    raise _fail(
                        "--snapshots serves the recorded snapshots: leave --backend and --environment out"
                    )
                skipped = {
                    s.id: "no snapshot recorded under --snapshots" for s in chosen if s.id not in recorded
                }
                from ..snapshots.environment import FACTORY

                environment = FACTORY
            else:
                skipped = _check_backend_choice(backend, chosen, endpoints)
            chosen = [s for s in chosen if s.id not in skipped]
            for sid, why in skipped.items():
                console.print(f"skipped {sid}: {why}", highlight=False, soft_wrap=True)
            if not chosen:
                raise _fail("no chosen scenario can run on this cluster")
            config = RunConfig(
                scenarios=[s.id for s in chosen],
                agents=specs,
                trials=trials,
                base_seed=seed,
                masked=sorted(set(mask or [])),
                limits=Limits(
                    max_steps=max_steps, wall_time_s=wall_time, max_tokens=max_tokens, max_cost_usd=max_cost
                ),
                history_s=history_s,
                settle_s=settle_s,
                environment=environment,
                backend=backend,
                churn=_churn(churn),
                scenario_dirs=extra_dirs,
                skipped=skipped,
                snapshots=str(snapshots.resolve()) if snapshots is not None else None,
                before_agent=_record_hook() if record_snapshots else None,
            )
            folder = run_dir or (runs_dir / new_run_id())
        folder = folder.resolve()  # agents and tools get absolute paths, whatever the cwd
        if concurrency > 1 and _shares_a_cluster(config.backend):
            raise _fail(
                f"--backend {config.backend} runs its episodes one at a time on one cluster "
                "(they would change the same app): use --concurrency 1"
            )
        runner = _executor(executor, concurrency, folder, ray_address)
        manifest, episodes, resumed = start_run(folder, config, registry)
    except (UnknownScenarioError, ScenarioSelectionError, UnknownAgentError, RunFolderError) as e:
        raise _fail(str(e)) from None
    console.print(
        f"{'resuming' if resumed else 'run'} {manifest.run_id}: {_count(len(episodes), 'episode')} "
        f"({_count(len(config.scenarios), 'scenario')} × {_count(config.trials, 'trial')} × "
        f"{_count(len(config.agents), 'agent')}) → {folder}",
        highlight=False,
        soft_wrap=True,
    )
    unsandboxed = _sandbox_warning(config)
    if unsandboxed:
        console.print(f"[bold yellow]WARNING[/]: {unsandboxed}", highlight=False, soft_wrap=True)
    done = done_keys(folder, retry_errors)
    already = sum(1 for e in episodes if e.key in done)
    share = share_preparation and getattr(runner, "units_may_fork", False)
    if share:
        shared = _shared_preparations([e for e in episodes if e.key not in done], concurrency)
        if shared:
            console.print(shared, highlight=False, soft_wrap=True)
    restore_signals = interrupt_on_signals(second_exits=True)  # Ctrl-C, SIGTERM: stop, resume later
    try:
        with BatchProgress(console, total=len(episodes), completed=already) as progress:
            summary = run_batch(
                folder,
                episodes,
                concurrency=concurrency,
                fail_fast=fail_fast,
                retry_errors=retry_errors,
                on_record=progress.update,
                executor=runner,
                share_prepared=share,
                keep_workers_busy=True,
            )
    except BatchInterrupted as e:
        left = len(episodes) - already - e.summary.ran
        console.print(
            f"interrupted: {e.summary.ran} episode(s) recorded this time, {left} not run (those in "
            f"flight were stopped and are not recorded). Resume with: itbench run --resume {folder}",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    finally:
        restore_signals()
    console.print(
        f"done: {summary.ran} ran, {summary.skipped} already done; {summary.counts()}, errors {summary.errors}"
        + (" [bold yellow](command agents ran WITHOUT a sandbox)[/]" if unsandboxed else ""),
        highlight=False,
        soft_wrap=True,  # one line, whatever the width: scripts read it
    )
    _warn_foreign(console, folder)
    if report:
        from ..report.build import write_reports

        md, html = write_reports([folder])
        console.print(f"report: {md} {html}", highlight=False, soft_wrap=True)
    if summary.stopped_early:
        raise typer.Exit(1)


def score_cmd(
    run_dir: Annotated[Path, typer.Argument(help="run folder")],
    dry_run: Annotated[
        bool,
        typer.Option(help="print the new scores without rewriting episodes.jsonl", envvar="ITBENCH_DRY_RUN"),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the summary as JSON", envvar="ITBENCH_JSON")
    ] = False,
) -> None:
    """Re-score a run from its files (agent outputs, topology, mitigation checks) without rerunning agents."""
    from rich.console import Console

    from ..harness.rescore import rescore_run
    from ..harness.runfolder import RunFolderError
    from ..report.tables import overall_table

    try:
        _warn_foreign(Console(stderr=True), run_dir)
        records = rescore_run(run_dir, write=not dry_run)
    except RunFolderError as e:
        raise _fail(str(e)) from None
    from ..console import print_table
    from ..report.aggregate import summarize

    summary = summarize([r for r in records if r.persona == "sre"])
    if as_json:
        print(summary.model_dump_json(indent=1))
        return
    print_table(overall_table(summary))


def _shared_preparations(todo: list[Any], concurrency: int) -> str | None:
    """The line that says how many preparations the episodes to run share (None: none shared)."""
    from ..harness.shared import groups

    units = groups(todo, keep_busy=concurrency)
    shared = [u for u in units if len(u) > 1]
    if not shared:
        return None
    n = sum(len(u) for u in shared)
    return (
        f"{_count(n, 'episode')} from {_count(len(shared), 'shared preparation')} (the agents of a scenario "
        "start from one twin, each in a process forked from it; --no-share-preparation: one each)"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _executor(name: str | None, concurrency: int, folder: Path, address: str | None = None) -> Any:
    """The run's executor (``harness/executor_registry.py``), or one clear error before the run starts."""
    from ..harness.executor_registry import ExecutorRequest, UnknownExecutorError, make_executor
    from ..plugins import PluginError

    try:
        return make_executor(name, ExecutorRequest(concurrency=concurrency, run_dir=folder, address=address))
    except (UnknownExecutorError, PluginError) as e:
        raise _fail(str(e)) from None


def _check_backend_choice(backend: str, chosen: list[Any], endpoints: Path | None = None) -> dict[str, str]:
    """A backend that loads, and only for the twin's scenario files (a persona's library scenario
    runs in its persona's own environment); ``live``: a cluster that answers, before the first
    episode. Returns the scenarios the backend cannot run, with why (left out of the run, and
    recorded in its config)."""
    if endpoints is not None and backend != "live":
        raise _fail("--endpoints is for --backend live")
    if backend == "twin":
        return {}
    skipped = _check_live(chosen, endpoints) if backend == "live" else {}
    from ..harness.backends import UnknownBackendError, backend_entry
    from ..plugins import PluginError
    from ..scenario.spec import Scenario

    try:
        backend_entry(backend, load=True)
    except (UnknownBackendError, PluginError) as e:
        raise _fail(str(e)) from None
    own = sorted(s.id for s in chosen if not isinstance(s, Scenario))
    if own:
        raise _fail(
            f"--backend serves the twin's scenario files; {', '.join(own[:3])}{' ...' if len(own) > 3 else ''} "
            "run(s) in their persona's own environment"
        )
    return skipped


def _record_hook() -> str:
    from ..snapshots.record import RECORD_HOOK

    return RECORD_HOOK


def _snapshots_of(folder: Path) -> dict[str, Path]:
    """The snapshots recorded under ``folder`` by scenario (an error before the run when none or a
    snapshot does not read); the episodes' processes find the folder in ``$ITBENCH_SNAPSHOTS``."""
    import os

    from ..snapshots.environment import SNAPSHOTS_ENV
    from ..snapshots.layout import SnapshotError
    from ..snapshots.read import find_snapshots

    try:
        found = find_snapshots(folder)
    except SnapshotError as e:
        raise _fail(f"--snapshots: {e}") from None
    if not found:
        raise _fail(f"--snapshots {folder}: no snapshot recorded there (`itbench snapshot record`)")
    os.environ[SNAPSHOTS_ENV] = str(folder.resolve())
    return found


def _shares_a_cluster(backend: str) -> bool:
    """Whether ``backend`` serves every episode from one cluster that outlives it (``live``)."""
    if backend == "twin":
        return False
    from ..harness.backend import SHARED_CLUSTER
    from ..harness.backends import REGISTRY, backend_entry

    factory = REGISTRY.factory(backend_entry(backend))
    return SHARED_CLUSTER in getattr(factory, "capabilities", frozenset())


def _check_live(chosen: list[Any], endpoints: Path | None) -> dict[str, str]:
    """The live cluster's endpoints read and answer, and no chosen scenario needs a system the live
    backend does not install (``harness/live_backend.py``); sets ``$ITBENCH_LIVE_ENDPOINTS`` for
    the episodes (worker processes included). Returns the scenarios whose faults need a kind the
    cluster does not serve (no Chaos Mesh), with why."""
    import os

    from ..harness.live_backend import ENDPOINTS_ENV, LiveBackend, LiveBackendError
    from ..harness.personas import persona_of

    needs = []
    for s in chosen:
        extension = persona_of(s).twin_extension(s)
        names = [str(getattr(a, "name", a)) for a in (extension.addons() if extension else [])]
        if names:
            needs.append(f"{s.id} ({', '.join(names)})")
    if needs:
        raise _fail(
            "the live backend does not install systems beside the app; these need them: "
            + ", ".join(needs[:3])
            + (" ..." if len(needs) > 3 else "")
        )
    if endpoints is not None:
        os.environ[ENDPOINTS_ENV] = str(endpoints.resolve())
    try:
        live = LiveBackend()
        live.check_reachable()
        skipped = {s.id: why for s in chosen if (why := live.unsupported(s))}
    except LiveBackendError as e:
        raise _fail(str(e)) from None
    return skipped


def report_cmd(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="run folder(s); several are merged (e.g. traces on + off)")
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="output folder (default: the first run folder)", envvar="ITBENCH_REPORT_DIR"),
    ] = None,
) -> None:
    """Write report.md and a self-contained report.html (Table-4 layout, heat map, complexity bars)."""
    from rich.console import Console

    from ..harness.runfolder import RunFolderError
    from ..report.build import write_reports

    try:
        for d in run_dirs:
            _warn_foreign(Console(stderr=True), d)
        md, html = write_reports(run_dirs, out)
    except RunFolderError as e:
        raise _fail(str(e)) from None
    typer.echo(f"{md}\n{html}")


def compare_cmd(
    run_a: Annotated[Path, typer.Argument(help="run folder A (the baseline)")],
    run_b: Annotated[Path, typer.Argument(help="run folder B (may be A's folder, with two agents)")],
    agent_a: Annotated[
        str | None, typer.Option("--agent-a", help="agent of run A (needed when A ran several)")
    ] = None,
    agent_b: Annotated[
        str | None, typer.Option("--agent-b", help="agent of run B (needed when B ran several)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the comparison as JSON")] = False,
) -> None:
    """Compare two runs (or two agents), paired by scenario: means, B − A, wins, sign test."""
    import dataclasses
    import json

    from rich import box
    from rich.console import Console
    from rich.table import Table

    from ..harness.runfolder import RunFolderError
    from ..report.build import load_records
    from ..report.compare import CompareError, compare

    try:
        result = compare(load_records([run_a]), load_records([run_b]), agent_a, agent_b)
    except (RunFolderError, CompareError) as e:
        raise _fail(str(e)) from None
    if as_json:
        typer.echo(json.dumps(dataclasses.asdict(result), indent=1))
        return
    console = Console()
    table = Table(
        title=f"A = {result.label_a} ({run_a}), B = {result.label_b} ({run_b}); paired by scenario",
        caption="n: scenarios paired; B > A, A > B, same: how many; p: two-sided exact sign test; pass^k: all k trials pass",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("metric", overflow="fold")
    for h in ("n", "A", "B", "B − A", "B > A", "A > B", "same", "p"):
        table.add_column(h, justify="right", no_wrap=True)
    for m in result.metrics:
        table.add_row(
            m.metric,
            str(m.scenarios),
            f"{m.mean_a:.3f}",
            f"{m.mean_b:.3f}",
            f"{m.difference:+.3f}",
            str(m.b_better),
            str(m.a_better),
            str(m.ties),
            f"{m.p_value:.3g}",
        )
    console.print(table)
    for side, missing in (("A", result.only_a), ("B", result.only_b)):
        if missing:
            console.print(
                f"only in {side} (not paired): {len(missing)} scenario(s): {', '.join(missing)}",
                highlight=False,
                soft_wrap=True,
            )


def view_cmd(
    run_dirs: Annotated[list[Path], typer.Argument(help="run folders (read afresh at every page load)")],
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (0: any free one)", envvar="ITBENCH_VIEW_PORT")] = 7575,
) -> None:
    """Browse runs in a local web app: filter episodes, read each one's scores and conversation;
    it refreshes while a run is going. Ctrl-C stops it."""
    import time

    from ..report.viewer import Viewer

    for d in run_dirs:
        if not d.is_dir():
            raise _fail(f"{d}: not a folder")
    try:
        viewer = Viewer(run_dirs, host=host, port=port).start()
    except OSError as e:
        raise _fail(
            f"cannot listen on {host}:{port}: {e.strerror or e} (--port 0 picks a free port)"
        ) from None
    typer.echo(f"itbench view: {viewer.url} (Ctrl-C stops it)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()


def register(app: typer.Typer) -> None:
    """Add the harness' top-level commands to ``app``."""
    from .export import export_cmd

    app.command("run")(run_cmd)
    app.command("score")(score_cmd)
    app.command("report")(report_cmd)
    app.command("compare")(compare_cmd)
    app.command("view")(view_cmd)
    app.command("export")(export_cmd)
    app.add_typer(agents_app, name="agents")


def _check_labels(specs: list[AgentSpec]) -> None:
    """Agents are told apart by their labels (tables, records, episode folders): no two may share one."""
    from ..harness.episode import episode_id

    seen: dict[str, str] = {}
    for spec in specs:
        slug = episode_id("x", spec.display, 0)
        if slug in seen:
            raise _fail(
                f"two agents would share the label {spec.display!r}"
                + (f" (as {seen[slug]!r})" if seen[slug] != spec.display else "")
                + ": name them apart with --label, one per --agent"
            )
        seen[slug] = spec.display


def _sandbox_warning(config: RunConfig) -> str | None:
    """The no-sandbox warning when a command agent of ``config`` asked for ``auto`` and this machine
    has no working bubblewrap."""
    from ..sandbox import fallback_warning

    on_auto = any(s.name == "command" and s.config.get("sandbox", "auto") == "auto" for s in config.agents)
    return fallback_warning("auto") if on_auto else None


def _warn_foreign(console: Console, run_dir: Path) -> None:
    """Say which lines of ``episodes.jsonl`` were skipped as not written by the harness."""
    from ..harness.runfolder import check_episodes

    check = check_episodes(run_dir)
    if check.unverified:
        console.print(
            f"warning: {run_dir} has no harness key; its records cannot be verified", highlight=False
        )
    for line in check.foreign:
        console.print(f"warning: skipped a record not written by the harness: {line}", highlight=False)


def _preflight(specs: list[AgentSpec]) -> None:
    """One clear error before the run starts: unknown model strings, missing API keys, unreachable
    servers (each agent module decides what it needs)."""
    from ..agents.registry import preflight
    from ..extras import MissingExtraError
    from ..harness.episode import agent_config_for

    for spec in specs:
        try:
            preflight(spec.name, agent_config_for(spec))
        except MissingExtraError as e:
            raise _fail(str(e)) from None
        except (ValueError, RuntimeError, OSError, LookupError) as e:
            raise _fail(f"agent {spec.name!r}: {e}") from None
