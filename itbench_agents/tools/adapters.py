"""Adapters: the same ToolSpecs as LangChain tools, OpenAI function schemas and an MCP server."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, get_type_hints

from .context import ToolContext
from .registry import ToolResult, ToolSpec

OnResult = Callable[[ToolSpec, dict[str, Any], ToolResult], None]


def to_openai_schema(spec: ToolSpec) -> dict[str, Any]:
    """The OpenAI chat-completions ``tools`` entry for ``spec``."""
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.json_schema()},
    }


def to_langchain(specs: Iterable[ToolSpec], ctx: ToolContext, on_result: OnResult | None = None) -> list[Any]:
    """LangChain ``StructuredTool``s bound to ``ctx``; errors come back as the tool's text."""
    from langchain_core.tools import StructuredTool

    tools = []
    for spec in specs:

        def run(_spec: ToolSpec = spec, **kwargs: Any) -> str:
            result = _spec.invoke(ctx, kwargs)
            if on_result is not None:
                on_result(_spec, kwargs, result)
            return result.output

        tools.append(
            StructuredTool.from_function(
                func=run, name=spec.name, description=spec.description, args_schema=spec.args_model
            )
        )
    return tools


def _signature(spec: ToolSpec) -> inspect.Signature:
    hints = get_type_hints(spec.fn)
    params = []
    for p in list(inspect.signature(spec.fn).parameters.values())[1:]:
        params.append(p.replace(annotation=hints.get(p.name, str)))
    return inspect.Signature(params, return_annotation=str)


def to_mcp(specs: Iterable[ToolSpec], ctx: ToolContext, name: str = "itbench-tools") -> Any:
    """An ``mcp`` MCPServer exposing ``specs``; a failed call is an MCP error result with the text."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError as MCPToolError
    from mcp.types import ToolAnnotations

    server = MCPServer(name)
    for spec in specs:

        def call(_spec: ToolSpec = spec, **kwargs: Any) -> str:
            result = _spec.invoke(ctx, kwargs)
            if result.error:
                raise MCPToolError(result.output)
            return result.output

        wrapper = _bind(call, spec)
        server.add_tool(
            wrapper,
            name=spec.name,
            description=spec.description,
            annotations=ToolAnnotations.model_validate(
                {"readOnlyHint": spec.kind == "read", "destructiveHint": spec.kind == "mutate"}
            ),
            structured_output=False,
        )
    return server


def _bind(call: Callable[..., str], spec: ToolSpec) -> Callable[..., str]:
    def wrapper(**kwargs: Any) -> str:
        return call(**kwargs)

    wrapper.__name__ = spec.name
    wrapper.__doc__ = spec.description
    wrapper.__signature__ = _signature(spec)  # type: ignore[attr-defined]
    return wrapper
