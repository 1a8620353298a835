"""`itbench snapshot record | serve`: episodes' observable state in ITBench-Lite's layout, and a
snapshot folder served read-only through the same endpoints as the twin."""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

snapshot_app = typer.Typer(
    help="Record scenarios' observable state in ITBench-Lite's snapshot layout, and serve snapshot "
    "folders read-only (`itbench run --snapshots DIR` scores agents' diagnoses on them).",
    no_args_is_help=True,
)


def _fail(msg: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {msg}", err=True)
    return typer.Exit(code)


def folder_name(scenario_id: str) -> str:
    """``sre/hotel-geo-scaled-to-zero-v1`` → ``hotel-geo-scaled-to-zero-v1``."""
    return scenario_id.split("/", 1)[-1]


@snapshot_app.command("record")
def record_cmd(
    scenario: Annotated[
        list[str] | None, typer.Option("--scenario", "-s", help="scenario id (repeatable)")
    ] = None,
    suite: Annotated[str | None, typer.Option(help="every scenario of a suite (sre)")] = None,
    out: Annotated[Path, typer.Option(help="where the snapshot folders go (one per scenario)")] = Path(
        "snapshots"
    ),
    seed: Annotated[
        int, typer.Option(help="base seed, as `itbench run --seed` (per-trial seeds derive from it)")
    ] = 0,
    trial: Annotated[int, typer.Option(help="which trial's seed", min=0)] = 0,
    window: Annotated[
        float,
        typer.Option(
            "--window-s", help="seconds of metrics, logs and traces before the recorded moment", min=60
        ),
    ] = 1800.0,
    history_s: Annotated[float, typer.Option(help="twin pre-history seconds, as `itbench run`")] = 3600.0,
    churn: Annotated[str, typer.Option(help="benign churn around the fault: default or none")] = "default",
) -> None:
    """Bring each scenario up on the twin as `itbench run` would (same seed: the same episode), wait
    for its alerts, and record what the agent would observe at the start of its turn."""
    from ..harness.catalogue import Catalogue
    from ..harness.episode import trial_seed
    from ..harness.twin_env import TwinEnvironment
    from ..scenario.registry import ScenarioSelectionError, UnknownScenarioError
    from ..scenario.spec import Scenario
    from .record import Recorder, write_snapshot

    if not scenario and not suite:
        raise _fail("choose scenarios with --suite or --scenario")
    if churn not in ("default", "none"):
        raise _fail(f"--churn {churn!r}: expected default or none")
    try:
        chosen = Catalogue.default().select(ids=scenario or [], suite=suite, tags=[])
    except (UnknownScenarioError, ScenarioSelectionError) as e:
        raise _fail(str(e)) from None
    twin_files = [s for s in chosen if isinstance(s, Scenario)]
    others = [s.id for s in chosen if not isinstance(s, Scenario)]
    if others:
        raise _fail(f"only the twin's SRE scenario files can be recorded; not {', '.join(others[:3])}")
    console = Console(stderr=True)
    failed = 0
    for sc in twin_files:
        t0 = time.perf_counter()
        s = trial_seed(seed, sc.id, trial)
        env = TwinEnvironment(
            sc, seed=s, workdir=tempfile.mkdtemp(prefix="itbench-record-"), history_s=history_s, churn=churn
        )
        try:
            env.deploy()
            env.inject()
            check = env.wait_for_alerts()
            if not check.ok:
                console.print(
                    f"[red]{sc.id}[/]: expected alerts did not fire: {', '.join(check.missing)}",
                    highlight=False,
                )
                failed += 1
                continue
            ep = env.endpoints
            assert env.api is not None
            rec = Recorder(
                env.api,
                ep.prometheus_url,
                ep.loki_url,
                ep.jaeger_url,
                env.now(),
                window_s=window,
                secret_namespaces=sc.task_namespaces,
            )
            dest = out / folder_name(sc.id)
            with console.status(f"{sc.id}: recording") as status:

                def progress(what: str, sid: str = sc.id, shown: Any = status) -> None:
                    shown.update(f"{sid}: {what}")

                meta = write_snapshot(
                    rec,
                    dest,
                    sc,
                    seed=s,
                    injected_at=env.injected_at,
                    fault_objects=env.fault_objects,
                    replicasets_before=env.replicasets_before,
                    call_edges=env.call_edges(),
                    progress=progress,
                )
        except Exception as e:  # noqa: BLE001 - one scenario's failure is reported, the rest go on
            console.print(f"[red]{sc.id}[/]: {type(e).__name__}: {e}", highlight=False)
            failed += 1
            continue
        finally:
            env.teardown()
            shutil.rmtree(env.workdir, ignore_errors=True)
        c = meta.counts
        console.print(
            f"{sc.id} → {dest} ({time.perf_counter() - t0:.1f} s): {c.get('objects', 0)} objects, "
            f"{c.get('events', 0)} events, {c.get('alerts', 0)} alerts, {c.get('series', 0)} series "
            f"({c.get('samples', 0)} samples), {c.get('log_lines', 0)} log lines, {c.get('traces', 0)} traces",
            highlight=False,
            soft_wrap=True,
        )
    if failed:
        raise typer.Exit(1)


@snapshot_app.command("serve")
def serve_cmd(
    folder: Annotated[Path, typer.Argument(help="a snapshot folder (this project's or ITBench-Lite's)")],
    workdir: Annotated[
        Path | None,
        typer.Option(help="where the kubeconfigs and endpoints.json go (default: a temporary folder)"),
    ] = None,
) -> None:
    """Serve a snapshot read-only (Kubernetes, Prometheus, Loki, Jaeger) until Ctrl-C; the
    credential written is read-only over the snapshot's namespaces."""
    from ..harness.access import grant_agent_access, write_agent_kubeconfigs
    from ..k8s.client import KubeApi
    from ..twin.replay import replay_twin
    from .layout import SnapshotError
    from .read import load_snapshot

    console = Console(stderr=True)
    try:
        meta, recording = load_snapshot(folder)
        left_out: list[str] = []
        twin = replay_twin(recording, left_out)
    except SnapshotError as e:
        raise _fail(str(e)) from None
    except Exception as e:  # an object the API server would not store, named
        raise _fail(f"{folder}: {type(e).__name__}: {e}") from None
    twin.admin_token = secrets.token_urlsafe(24)
    private = Path(tempfile.mkdtemp(prefix="itbench-snapshot-"))
    work = (workdir or Path(tempfile.mkdtemp(prefix="itbench-snapshot-work-"))).resolve()
    endpoints = twin.serve(private)
    try:
        api = KubeApi(endpoints.kube_url, token=twin.admin_token)
        ns = recording.namespace
        namespaces = [ns, *(meta.namespaces if meta else [])]
        _, reader = grant_agent_access(api, namespaces, write=False)
        creds = write_agent_kubeconfigs(endpoints.kubeconfig, namespaces, work, reader, reader)
        mine = endpoints.model_copy(
            update={
                "kubeconfig": str(creds.kubeconfig),
                "kubeconfig_readonly": str(creds.kubeconfig_readonly),
            }
        )
        path = mine.write(work / "endpoints.json")
        what = f"{meta.scenario_id} (seed {meta.seed})" if meta else "an ITBench-Lite snapshot"
        console.print(
            f"serving {what} as at {_when(recording.now)}, read-only; Ctrl-C stops it", highlight=False
        )
        if left_out:
            shown = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more" if len(left_out) > 5 else "")
            console.print(
                f"not served (kinds this API does not serve): {shown}", highlight=False, soft_wrap=True
            )
        console.print(
            f"endpoints: {path}\nkubectl --kubeconfig {creds.kubeconfig} get pods -n {ns}", highlight=False
        )
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        twin.close()
        shutil.rmtree(private, ignore_errors=True)


def _when(unix: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(unix, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
