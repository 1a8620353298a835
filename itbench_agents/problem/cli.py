"""`itbench problem start | submit | stop | status`: one scenario brought up with its fault in place,
worked on by hand (kubectl, the MCP tools, LangGraph Studio, another agent), then scored."""

from __future__ import annotations

import datetime as _dt
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .state import ProblemDir, ProblemRequest, ProblemResult, ProblemTask

problem_app = typer.Typer(
    help="Bring one scenario up with its fault in place, work on it by hand or with any agent, "
    "then score it (`start`, `submit`, `stop`).",
    no_args_is_help=True,
)

START_TIMEOUT_S = 900.0
"""How long `start` waits for the fault and its alerts (a week of FinOps past takes seconds)."""
SUBMIT_TIMEOUT_S = 900.0
"""How long `submit` waits for the score (the settle period is twin time: seconds of wall time)."""
STOP_GRACE_S = 30.0


def _fail(msg: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {msg}", err=True)
    return typer.Exit(code)


def _folder(state_dir: Path | None) -> ProblemDir:
    return ProblemDir(state_dir.expanduser()) if state_dir else ProblemDir.default()


StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="folder of the running problem (default: ~/.itbench/problem)",
        envvar="ITBENCH_PROBLEM_DIR",
    ),
]


def _log_tail(problem: ProblemDir, lines: int = 20) -> str:
    try:
        return "\n".join(problem.log_file.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _when(unix: float) -> str:
    return _dt.datetime.fromtimestamp(unix, _dt.UTC).strftime("%H:%M:%S UTC")


def _print_task(console: Console, task: ProblemTask) -> None:
    ep = task.endpoints
    left = max(0.0, task.deadline_unix - time.time())
    console.print(
        f"[bold]problem {task.scenario}[/] (seed {task.seed}) is ready: the fault is in place. "
        f"Submit within {left:.0f} s (by {_when(task.deadline_unix)}).",
        highlight=False,
    )
    console.print("\n[bold]goal[/]")
    console.print(task.goal, highlight=False, markup=False)
    console.print("\n[bold]endpoints[/] (your credential: the agent's, scoped to the task's namespaces)")
    rows = [
        ("work folder", task.workdir),
        ("kubeconfig", ep.kubeconfig),
        ("kubeconfig (read-only)", ep.kubeconfig_readonly),
        ("kube", ep.kube_url),
        ("prometheus", ep.prometheus_url),
        ("loki", ep.loki_url),
        ("jaeger", ep.jaeger_url),
        ("alertmanager", ep.alertmanager_url),
        ("opencost", ep.opencost_url),
        ("opa", ep.opa_url),
        ("ansible inventory", ep.ansible_inventory),
        ("endpoints file", task.endpoints_file),
    ]
    for name, value in rows:
        if value:
            console.print(f"  {name:<23} {value}", highlight=False, markup=False)
    ns = " ".join(f"-n {shlex.quote(n)}" for n in task.namespaces)
    mcp = f"itbench mcp serve --endpoints {shlex.quote(task.endpoints_file)} {ns} --allow-mutate --workdir {shlex.quote(task.workdir)}"
    steps = [
        (
            f"source {shlex.quote(task.env_file)}",
            "the task's variables in your shell, as the command agent gets them",
        )
    ]
    if ep.kube_url:  # a task with a cluster (not anomaly detection: its data is in the work folder)
        steps.append((mcp, "the benchmark's tools for an MCP client"))
    if task.persona == "sre":
        studio = f"ITBENCH_ENDPOINTS={shlex.quote(task.endpoints_file)} langgraph dev"
        steps.append((studio, "sre-react in LangGraph Studio"))
    if "diagnosis" in task.kind:
        steps.append(
            (
                "itbench problem submit --output diagnosis.json",
                "score the cluster as it is now, and the diagnosis",
            )
        )
    else:
        steps.append(("itbench problem submit", "score what the goal asks for, as it is now"))
    steps.append(("itbench problem stop", "tear it down without a score"))
    console.print("\n[bold]next[/]")
    for line, why in steps:
        console.print(f"  {line}", highlight=False, markup=False)
        console.print(f"      [dim]# {why}[/]", highlight=False)
    if "diagnosis" in task.kind:
        console.print(
            f"\nThe diagnosis is {task.workdir}/agent_output.json (the command agent's contract; "
            "`submit --output FILE` copies FILE there).",
            highlight=False,
            markup=False,
        )


@problem_app.command("start")
def start_cmd(
    scenario: Annotated[str, typer.Argument(help="scenario id (see `itbench scenarios list`)")],
    seed: Annotated[
        int, typer.Option(help="base seed: churn, baseline and noise, as `itbench run --seed`")
    ] = 0,
    wall_time: Annotated[
        float, typer.Option(help="seconds you have before the episode ends as a timeout")
    ] = 3600.0,
    history_s: Annotated[
        float, typer.Option("--history-s", help="twin seconds of past before the fault")
    ] = 3600.0,
    mask: Annotated[
        list[str] | None, typer.Option(help="observability to hide (traces, logs, metrics), repeatable")
    ] = None,
    churn: Annotated[str, typer.Option(help="benign churn around the fault: default | none")] = "default",
    scenarios_dir: Annotated[
        list[Path] | None, typer.Option(help="a folder of your own scenarios (repeatable)")
    ] = None,
    run_dir: Annotated[
        Path | None, typer.Option(help="run folder for the record (default: RUNS_DIR/problem-<time>)")
    ] = None,
    runs_dir: Annotated[
        Path, typer.Option(envvar="ITBENCH_RUNS_DIR", help="where new run folders go")
    ] = Path("runs"),
    state_dir: StateDir = None,
) -> None:
    """Bring SCENARIO up with its fault (and churn) in place, and print the goal and endpoints."""
    from ..harness.catalogue import Catalogue
    from ..scenario.loader import ScenarioLoadError
    from ..scenario.registry import UnknownScenarioError, add_scenario_dirs

    console = Console(soft_wrap=True)  # paths and commands stay whole for copy and paste
    problem = _folder(state_dir)
    running = problem.request()
    if problem.server_pid() is not None and running is not None:
        raise _fail(f"problem {running.scenario} is already running: `itbench problem stop` first")
    if churn not in ("default", "none"):
        raise _fail(f"--churn must be default or none, not {churn!r}")
    if wall_time <= 0:
        raise _fail("--wall-time must be positive")
    extra = add_scenario_dirs(scenarios_dir or [])
    try:
        Catalogue.default().get(scenario)
    except (UnknownScenarioError, ScenarioLoadError) as e:
        raise _fail(str(e)) from None
    problem.clear()  # what a finished or crashed problem left behind
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = (run_dir or runs_dir / f"problem-{stamp}").resolve()
    request = ProblemRequest(
        scenario=scenario,
        seed=seed,
        run_dir=str(folder),
        wall_time_s=wall_time,
        history_s=history_s,
        masked=sorted(set(mask or [])),
        churn=churn,
        scenario_dirs=extra,
    )
    problem.write(problem.request_file, request)
    with problem.log_file.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "itbench_agents.problem.server", str(problem.root)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command; `stop` ends it
        )
    problem.pid_file.write_text(f"{proc.pid}\n")
    deadline = time.monotonic() + START_TIMEOUT_S
    with console.status(f"bringing up {scenario}: deploy, baseline, churn, fault, alerts..."):
        while True:
            task = problem.task()
            if task is not None:
                break
            result = problem.result()
            if result is not None or proc.poll() is not None:
                why = _episode_failure(result) if result else None
                problem.clear()
                raise _fail(
                    f"the problem did not come up: {why or 'the server exited'}\n{_log_tail(problem)}", code=1
                )
            if time.monotonic() > deadline:
                proc.terminate()
                raise _fail(
                    f"the problem did not come up within {START_TIMEOUT_S:.0f} s\n{_log_tail(problem)}", 1
                )
            time.sleep(0.2)
    _print_task(console, task)


def _episode_failure(result: ProblemResult) -> str | None:
    """Why the problem did not come up: the server's failure, or the episode's (env_error...)."""
    from ..harness.runfolder import read_episodes

    if result.failure:
        return result.failure
    for rec in read_episodes(result.run_dir):
        if rec.episode_id == result.episode_id and rec.termination != "submitted":
            return f"{rec.termination}: {rec.error}"
    return None


@problem_app.command("submit")
def submit_cmd(
    output: Annotated[
        Path | None,
        typer.Option(help="your diagnosis (JSON, the agent-output schema); copied to the work folder"),
    ] = None,
    state_dir: StateDir = None,
) -> None:
    """Score the cluster as it is now and the diagnosis; print the scores. Ends the problem."""
    from ..agents.command import read_diagnosis
    from .state import Submission

    console = Console(soft_wrap=True)  # paths and commands stay whole for copy and paste
    problem = _folder(state_dir)
    task = problem.task()
    if task is None or problem.server_pid() is None:
        raise _fail("no problem is running (`itbench problem start SCENARIO`)", code=1)
    if output is not None:
        if not output.is_file():
            raise _fail(f"{output}: no such file")
        staged = Path(task.workdir) / "agent_output.json"
        _, why = read_diagnosis(output)
        if why is not None:
            raise _fail(
                f"{output}: {why.replace('agent_output.json', 'the diagnosis', 1)}; nothing was submitted"
            )
        staged.write_bytes(output.read_bytes())
    problem.write(problem.submission_file, Submission(submitted_unix=time.time()))
    deadline = time.monotonic() + SUBMIT_TIMEOUT_S
    with console.status("scoring: settle, end-state checks, collateral..."):
        while (result := problem.result()) is None:
            if problem.server_pid() is None:
                raise _fail(f"the problem's server exited before scoring\n{_log_tail(problem)}", code=1)
            if time.monotonic() > deadline:
                raise _fail(f"no score within {SUBMIT_TIMEOUT_S:.0f} s\n{_log_tail(problem)}", code=1)
            time.sleep(0.2)
    _wait_gone(problem)
    problem.clear()
    if result.failure or result.episode_id is None:
        raise _fail(result.failure or "no episode was recorded", code=1)
    _print_record(console, result.run_dir, result.episode_id)


def _wait_gone(problem: ProblemDir, grace_s: float = STOP_GRACE_S) -> None:
    deadline = time.monotonic() + grace_s
    while problem.server_pid() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    if problem.server_pid() is not None:
        problem.signal_server(signal.SIGKILL)


def _print_record(console: Console, run_dir: str, episode_id: str) -> None:
    from ..harness.runfolder import read_episodes

    rec = next((r for r in read_episodes(run_dir) if r.episode_id == episode_id), None)
    if rec is None:
        raise _fail(f"{run_dir} has no record of {episode_id}", code=1)
    mark = {True: "[green]passed[/]", False: "[red]failed[/]"}
    console.print(f"[bold]{rec.scenario_id}[/]: {rec.termination}" + (f" ({rec.error})" if rec.error else ""))
    if rec.diagnosis is not None:
        d = rec.diagnosis
        console.print(
            f"  diagnosis   {mark[d.correct]}  named right: {', '.join(d.matched) or '-'}; "
            f"on the fault's chain: {', '.join(d.on_chain) or '-'}; "
            f"wrong: {', '.join(d.wrong()) or '-'}; root causes missed: {len(d.missed)}"
            + (f"; {d.reason}" if d.reason else ""),
            highlight=False,
        )
    if rec.mitigation is not None and rec.mitigation.applicable:
        m = rec.mitigation
        console.print(
            f"  mitigation  {mark[m.passed]}" + (f"  {m.reason}" if m.reason else ""), highlight=False
        )
        if m.alerts_firing:
            console.print(f"    alerts still firing: {', '.join(m.alerts_firing)}", highlight=False)
        for check in m.checks:
            state = "-" if check.ok is None else ("ok" if check.ok else "FAILED")
            console.print(f"    {check.name}: {state} {check.detail}", highlight=False, markup=False)
        for c in m.collateral:
            console.print(f"    collateral: {c.object} {c.change} {c.detail}", highlight=False, markup=False)
    for name, score in rec.scores.items():
        console.print(f"  {name:<11} {score.value:.2f}  {score.explanation}", highlight=False, markup=False)
    console.print(f"\nrecord: {run_dir} (`itbench report {run_dir}`)", highlight=False)


@problem_app.command("stop")
def stop_cmd(state_dir: StateDir = None) -> None:
    """Tear the problem down without scoring it (nothing is recorded)."""
    console = Console(soft_wrap=True)  # paths and commands stay whole for copy and paste
    problem = _folder(state_dir)
    request = problem.request()
    if problem.server_pid() is None:
        problem.clear()
        raise _fail("no problem is running", code=1)
    problem.signal_server(signal.SIGTERM)
    with console.status("tearing down..."):
        _wait_gone(problem)
    problem.clear()
    console.print(
        f"stopped {request.scenario if request else 'the problem'}; nothing was recorded", highlight=False
    )


@problem_app.command("status")
def status_cmd(state_dir: StateDir = None) -> None:
    """Show the running problem's goal and endpoints, or say that none is running."""
    console = Console(soft_wrap=True)  # paths and commands stay whole for copy and paste
    problem = _folder(state_dir)
    task = problem.task()
    request = problem.request()
    if problem.server_pid() is None:
        raise _fail("no problem is running", code=1)
    if task is None:
        console.print(f"{request.scenario if request else 'a problem'} is coming up", highlight=False)
        return
    _print_task(console, task)
