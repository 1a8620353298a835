"""``itbench mcp serve``: the agent tools over the Model Context Protocol (stdio).

    itbench mcp serve --endpoints run/endpoints.json --namespace otel-demo --allow-mutate

Claude Code, Codex or any MCP client can then use the same tools as the baseline agents.
"""

from __future__ import annotations

from pathlib import Path

import typer

mcp_app = typer.Typer(help="Serve the agent tools over the Model Context Protocol.", no_args_is_help=True)


@mcp_app.command("serve")
def serve(
    endpoints: Path = typer.Option(
        ..., "--endpoints", help="Endpoints file (itbench twin serve --endpoints writes one)."
    ),
    namespace: list[str] = typer.Option(
        [], "--namespace", "-n", help="Namespaces kubectl may touch (repeatable)."
    ),
    allow_mutate: bool = typer.Option(
        False, "--allow-mutate", help="Allow mutating kubectl commands (mitigation)."
    ),
    tools: str = typer.Option("direct", "--tools", help="direct | nl2 | all"),
    tool_model: str | None = typer.Option(
        None, "--tool-model", help="Model for the NL2* tools (litellm string)."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible server for the tool model."
    ),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", help="Variable holding the tool model's key."
    ),
    live: bool = typer.Option(
        False, "--live", help="A live cluster: `wait` sleeps instead of advancing the twin."
    ),
    workdir: Path | None = typer.Option(None, "--workdir", help="Folder kubectl -f may read from."),
) -> None:
    """Serve the tools on stdio for an MCP client."""
    from pydantic import ValidationError

    from ..twin.endpoints import Endpoints
    from .adapters import to_mcp
    from .context import ToolContext
    from .registry import all_tools
    from .toolsets import DIRECT, NL2

    try:
        eps = Endpoints.read(endpoints)
    except FileNotFoundError:
        raise typer.BadParameter(f"{endpoints}: no such file", param_hint="--endpoints") from None
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise typer.BadParameter(
            f"{endpoints}: not a valid endpoints file ({fields})", param_hint="--endpoints"
        ) from None
    if tools not in {"direct", "nl2", "all"}:
        raise typer.BadParameter("must be direct, nl2 or all", param_hint="--tools")
    if tools == "nl2" and not tool_model:
        raise typer.BadParameter("the NL2* tools need --tool-model", param_hint="--tools")
    ctx = ToolContext(
        endpoints=eps,
        namespaces=list(namespace),
        phase="mitigation" if allow_mutate else "diagnosis",
        on_twin=not live,
        workdir=str(workdir) if workdir else None,
    )
    if tool_model:
        from ..llm.client import LLMClient
        from ..llm.models import ModelConfigError, ModelSettings
        from ..llm.preflight import preflight_model

        settings = ModelSettings(model=tool_model, base_url=base_url, api_key_env=api_key_env)
        try:
            preflight_model(settings, role="tools")
        except ModelConfigError as exc:
            raise typer.BadParameter(str(exc), param_hint="--tool-model") from None
        ctx.tool_model = LLMClient.create(settings, role="tools")
    registry = all_tools()
    names = {"direct": DIRECT, "nl2": NL2, "all": list(dict.fromkeys(DIRECT + NL2))}[tools]
    server = to_mcp([registry[n] for n in names], ctx)
    server.run("stdio")
