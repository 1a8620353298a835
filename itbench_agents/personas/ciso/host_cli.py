"""`itbench twin host`: serve the RHEL 9 host twin of a rhel-opa scenario (or of a host spec) for
Ansible. The CISO persona owns it because it reads the persona's scenarios; `itbench_agents/cli.py`
adds it to the twin's command group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def serve_host(
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario", "-s", envvar="ITBENCH_SCENARIO", help="A rhel-opa scenario whose host to serve."
        ),
    ] = None,
    variant: Annotated[
        str, typer.Option("--variant", help="violating (as agents get it) or compliant.")
    ] = "violating",
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec", help="A host spec YAML (files, packages, services, kernel...) instead of a scenario."
        ),
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", envvar="ITBENCH_WORKDIR", help="Folder for the host and inventory.ini."),
    ] = None,
) -> None:
    """Serve a RHEL 9 host twin for Ansible until interrupted: writes an inventory (group
    `rhel9_servers`) and prints the `ansible-playbook` line that reaches the host."""
    import os
    import shlex
    import signal
    import tempfile
    import threading

    import yaml
    from pydantic import ValidationError

    from ...twin.host.ansible import PLUGINS, ServedHost, inventory_text
    from ...twin.host.host import HostTwin, host_sandbox_problem
    from ...twin.host.spec import HostSpec

    if (scenario is None) == (spec is None):
        raise typer.BadParameter("give --scenario or --spec (one of them)")
    if variant not in ("violating", "compliant"):
        raise typer.BadParameter("violating or compliant", param_hint="--variant")
    problem = host_sandbox_problem()
    if problem:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)
    if spec is not None:
        try:
            host_spec = HostSpec.model_validate(yaml.safe_load(spec.read_text()) or {})
        except (OSError, yaml.YAMLError, ValidationError) as e:
            typer.echo(f"error: {spec}: {e}", err=True)
            raise typer.Exit(2) from e
    else:
        from .library import ciso_library

        found = [s for s in ciso_library() if s.id == scenario and s.task_class == "rhel-opa"]
        if not found:
            typer.echo(
                f"error: {scenario!r} is not a rhel-opa scenario (see `itbench scenarios list --suite ciso`)",
                err=True,
            )
            raise typer.Exit(2)
        host_spec = (found[0].host if variant == "violating" else found[0].host_compliant) or HostSpec()
    folder = workdir or Path(tempfile.mkdtemp(prefix="itbench-host-"))
    folder.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ServedHost(HostTwin.create(folder / "host", host_spec)) as served:
        inventory = folder / "inventory.ini"
        inventory.write_text(inventory_text([served]))
        inventory.chmod(0o600)
        plugins = shlex.quote(str(PLUGINS / "connection"))
        print(
            f"host {served.host.hostname} at {served.url} ({os.path.basename(str(scenario or spec))}, {variant})"
        )
        print(f"inventory: {inventory}")
        print(
            f"ANSIBLE_CONNECTION_PLUGINS={plugins} uv run ansible-playbook -i {shlex.quote(str(inventory))} playbook.yml"
        )
        print("Ctrl-C to stop", flush=True)
        stop.wait()
