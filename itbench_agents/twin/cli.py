"""`itbench twin ...`: run the embedded Kubernetes twin for kubectl and other clients."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

twin_app = typer.Typer(help="Run and inspect the embedded Kubernetes twin.", no_args_is_help=True)


@twin_app.command()
def serve(
    app: Annotated[
        str | None, typer.Option("--app", envvar="ITBENCH_APP", help="App to deploy (e.g. otel-demo).")
    ] = None,
    manifests: Annotated[
        Path | None,
        typer.Option(
            "--manifests", envvar="ITBENCH_MANIFESTS", help="Folder (or file) of Kubernetes YAML to apply."
        ),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", envvar="ITBENCH_PORT", help="Kubernetes API port (0 = any free port).")
    ] = 0,
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", envvar="ITBENCH_KUBECONFIG", help="Also copy the kubeconfig here."),
    ] = None,
    endpoints: Annotated[
        Path | None,
        typer.Option("--endpoints", envvar="ITBENCH_ENDPOINTS", help="Also write the endpoints JSON here."),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", envvar="ITBENCH_SEED", help="Seed of the twin (determinism).")
    ] = 0,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", envvar="ITBENCH_WORKDIR", help="Folder for kubeconfig and endpoints.json."),
    ] = None,
    addon: Annotated[
        list[str] | None,
        typer.Option(
            "--addon", help="Install a system beside Kubernetes (repeatable): kyverno, opa, opencost."
        ),
    ] = None,
    speed: Annotated[
        float,
        typer.Option(
            "--speed",
            min=0.01,
            help="Cluster seconds per wall second (1: as a real cluster; more: a fast live cluster "
            "for `itbench run --backend live`).",
        ),
    ] = 1.0,
) -> None:
    """Start the twin and serve its endpoints until interrupted (Ctrl-C / SIGTERM)."""
    import signal
    import threading

    from rich.console import Console
    from rich.markup import escape

    from .kube.errors import ApiError
    from .serve import running_twin

    console = Console(soft_wrap=True)  # never wrap paths and commands meant for copy-paste
    if app and manifests:
        raise typer.BadParameter("give --app or --manifests, not both")
    if manifests is not None and not manifests.exists():
        raise typer.BadParameter(f"{manifests} does not exist", param_hint="--manifests")
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        ctx = running_twin(
            app=app,
            manifests=manifests,
            seed=seed,
            workdir=workdir,
            kube_port=port,
            addons=addon or (),
            speed=speed,
        )
        twin = ctx.__enter__()
    except (ValueError, FileNotFoundError, LookupError) as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    except ApiError as e:  # a manifest the API server refuses: its Status, as kubectl would print it
        where = "".join(f" ({n})" for n in getattr(e, "__notes__", []))
        console.print(
            f"[red]error:[/red] the API server refused a manifest{escape(where)}: {escape(e.message)}",
            highlight=False,
        )
        raise typer.Exit(1) from e
    try:
        ep = twin.endpoints
        assert ep is not None
        kc = Path(ep.kubeconfig)
        if kubeconfig is not None:
            kubeconfig.parent.mkdir(parents=True, exist_ok=True)
            kubeconfig.write_text(kc.read_text())
            kc = kubeconfig
            ep = ep.model_copy(update={"kubeconfig": str(kubeconfig)})
        if endpoints is not None:
            ep.write(endpoints)
        served = f"{app or manifests or 'bare cluster'}" + "".join(f" + {a}" for a in addon or ())
        console.print(f"[bold green]itbench twin[/bold green] serving ({escape(served)})")
        console.print(f"  {'kubeconfig':<15} {kc}")
        for name in ("kube_url", "prometheus_url", "loki_url", "jaeger_url", "opa_url", "opencost_url"):
            url = getattr(ep, name)
            if url:
                console.print(f"  {name:<15} {url}")
        if endpoints is not None:
            console.print(f"  {'endpoints':<15} {endpoints}")
        console.print("\nTry:")
        console.print(f"  kubectl --kubeconfig {kc} get pods -A", soft_wrap=True, highlight=False)
        if ep.opa_url:
            console.print(f"  curl {ep.opa_url}/v1/policies", soft_wrap=True, highlight=False)
        if ep.opencost_url:
            console.print(
                f"  curl '{ep.opencost_url}/allocation/compute?window=1d&aggregate=namespace&accumulate=true'",
                soft_wrap=True,
                highlight=False,
            )
        console.print("\nPress Ctrl-C to stop.")
        while not stop.wait(0.5):
            pass
        console.print("stopping…")
    finally:
        ctx.__exit__(None, None, None)
