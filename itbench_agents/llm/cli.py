"""``itbench llm ...``: serve a scripted model over the OpenAI protocol (no network, no key)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

llm_app = typer.Typer(
    help="Models without a provider: a scripted OpenAI-compatible server.", no_args_is_help=True
)


@llm_app.command("serve-script")
def serve_script(
    script: Annotated[Path, typer.Argument(help="YAML turns (the scripted:FILE format, e.g. examples/llm/)")],
    port: Annotated[int, typer.Option(help="port on 127.0.0.1", envvar="ITBENCH_LLM_PORT")] = 8089,
    role: Annotated[str, typer.Option(help="the script's role when it has several (agent, tools)")] = "agent",
    api_key: Annotated[
        str | None, typer.Option(help="answer 401 to any other key (default: accept any)")
    ] = None,
) -> None:
    """Answer POST /v1/chat/completions from SCRIPT, turn after turn, starting over after the last
    one, so that runs can follow each other without a restart. Point an agent at it with
    --model openai/test --base-url http://127.0.0.1:PORT/v1."""
    from ..extras import MissingExtraError, require_extra

    try:
        require_extra("agents", "`itbench llm serve-script`")
    except MissingExtraError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    from .models import ModelConfigError
    from .scripted import load_script
    from .testing_server import OpenAITestServer

    try:
        turns = load_script(script, role)
    except ModelConfigError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    try:
        srv = OpenAITestServer(turns, api_key=api_key, port=port, repeat=True)
    except OSError as e:
        typer.echo(f"error: cannot listen on 127.0.0.1:{port}: {e.strerror}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"serving {len(turns)} scripted turns at {srv.url} (Ctrl-C stops)")
    try:
        srv._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv._httpd.server_close()
