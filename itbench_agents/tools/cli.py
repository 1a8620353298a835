"""``itbench mcp serve`` (the agent tools over the Model Context Protocol, stdio) and
``itbench tools list`` (every registered tool, plug-ins included, with its source).

    itbench mcp serve --endpoints run/endpoints.json --namespace otel-demo --allow-mutate
    itbench mcp serve --endpoints run/endpoints.json --tools direct,+runbook

Claude Code, Codex or any MCP client can then use the same tools as the baseline agents.
"""

from __future__ import annotations

from pathlib import Path

import typer

mcp_app = typer.Typer(help="Serve the agent tools over the Model Context Protocol.", no_args_is_help=True)
tools_app = typer.Typer(help="The tools agents and MCP clients can use.", no_args_is_help=True)


@tools_app.command("list")
def tools_list(
    as_json: bool = typer.Option(False, "--json", help="print JSON", envvar="ITBENCH_JSON"),
) -> None:
    """List every registered tool (built-in and installed plug-ins): kind, the sets it is in, source."""
    import json

    from rich.table import Table

    from ..console import print_table
    from .registry import all_tools, broken_plugins, tool_source
    from .toolsets import DIRECT, NL2

    rows: list[dict[str, object]] = []
    for name, spec in sorted(all_tools().items()):
        sets = [s for s, names in (("direct", DIRECT), ("nl2", NL2)) if name in names]
        rows.append(
            {
                "name": name,
                "kind": spec.kind,
                "sets": sets,
                "source": tool_source(name),
                "description": spec.description.split("\n\n")[0].replace("\n", " "),
            }
        )
    for name, reason in sorted(broken_plugins().items()):
        rows.append(
            {"name": name, "kind": "", "sets": [], "source": "plug-in (broken)", "description": reason}
        )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title="tools (add one to an agent with --tools direct,+NAME)")
    for c in ("name", "kind", "sets", "source", "description"):
        t.add_column(c)
    for r in rows:
        in_sets = r["sets"]
        assert isinstance(in_sets, list)
        t.add_row(str(r["name"]), str(r["kind"]), ", ".join(in_sets), str(r["source"]), str(r["description"]))
    print_table(t)


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
    tools: str = typer.Option(
        "direct",
        "--tools",
        help="direct | nl2 | all, then registered tools by name: direct,+runbook (see `itbench tools list`)",
    ),
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
    """Serve the tools on stdio for an MCP client (needs the `mcp` extra; `--tool-model`, `agents`)."""
    from pydantic import ValidationError

    from ..core.endpoints import Endpoints
    from ..extras import MissingExtraError, require_extra
    from .adapters import to_mcp
    from .context import ToolContext
    from .toolsets import ToolSelectionError, check_tools, toolset

    try:
        eps = Endpoints.read(endpoints)
    except FileNotFoundError:
        raise typer.BadParameter(f"{endpoints}: no such file", param_hint="--endpoints") from None
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise typer.BadParameter(
            f"{endpoints}: not a valid endpoints file ({fields})", param_hint="--endpoints"
        ) from None
    try:
        selection = check_tools(tools, bases=("direct", "nl2", "all"))
    except ToolSelectionError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tools") from None
    if selection.base == "nl2" and not tool_model:
        raise typer.BadParameter("the NL2* tools need --tool-model", param_hint="--tools")
    try:
        require_extra("mcp", "`itbench mcp serve`")
        if tool_model:
            require_extra("agents", "`itbench mcp serve --tool-model`")
    except MissingExtraError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
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
    server = to_mcp(toolset(selection), ctx)
    server.run("stdio")
