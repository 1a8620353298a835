"""What a tool is: one typed function per tool, tagged ``read`` or ``mutate``, and the ``@tool``
decorator that declares it (the lookup, with plug-ins, is ``registry.py``).

A tool is a plain function whose first parameter is the :class:`~.context.ToolContext` and whose
other parameters are typed arguments; its docstring's first paragraph is the description the
model sees, and its ``Args:`` section describes the parameters::

    @tool(kind="read")
    def alerts(ctx: ToolContext, state: str = "firing") -> str:
        \"\"\"List the alerts Prometheus is evaluating.

        Args:
            state: "firing", "pending" or "all".
        \"\"\"

The decorator builds a :class:`ToolSpec` (name, description, kind, a pydantic model of the
arguments) and registers it. Installed packages add tools through ``itbench_agents.tools`` entry
points naming such functions (``itbench_agents/plugins.py``); ``itbench tools list`` shows them all. Adapters (``adapters.py``) turn specs into LangChain tools, OpenAI
function schemas and an MCP server, so every agent shares exactly the same tools.

Tool errors are observations: raise :class:`ToolError` (or anything else) inside a tool and
:meth:`ToolSpec.invoke` returns ``ToolResult(error=True, output="Error: ...")``.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .errors import ToolError, UnknownToolError

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = ["ToolError", "ToolKind", "ToolResult", "ToolSpec", "UnknownToolError", "make_spec", "tool"]

ToolKind = Literal["read", "mutate"]


@dataclass(frozen=True)
class ToolResult:
    output: str
    error: bool = False
    truncated: bool = False
    tokens: int = 0
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    kind: ToolKind
    fn: Callable[..., str]
    args_model: type[BaseModel]

    def json_schema(self) -> dict[str, Any]:
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        return schema

    def invoke(self, ctx: ToolContext, args: dict[str, Any] | None) -> ToolResult:
        """Validate ``args``, run the tool, cap the observation. Never raises for tool failures."""
        from .budget import cap_observation

        t0 = time.perf_counter()
        try:
            parsed = self.args_model.model_validate(args or {})
        except ValidationError as exc:
            msg = f"Error: invalid arguments for tool {self.name}: " + "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in exc.errors()
            )
            return ToolResult(msg, error=True, elapsed_s=time.perf_counter() - t0)
        error = False
        try:
            out = self.fn(ctx, **parsed.model_dump())
        except ToolError as exc:
            out, error = f"Error: {exc}", True
        except Exception as exc:  # tool errors are observations, never crashes
            out, error = f"Error: {self.name} failed: {type(exc).__name__}: {exc}", True
        capped, truncated, tokens = cap_observation(str(out), ctx.max_observation_tokens)
        return ToolResult(
            capped, error=error, truncated=truncated, tokens=tokens, elapsed_s=time.perf_counter() - t0
        )


_REGISTRY: dict[str, ToolSpec] = {}
"""Every declared tool by name (``registry.py`` reads it; tests may swap it for a copy)."""


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Description (text before ``Args:``) and per-argument help from a Google-style docstring."""
    doc = inspect.cleandoc(doc or "")
    parts = re.split(r"^\s*Args:\s*$", doc, maxsplit=1, flags=re.M)
    description = parts[0].strip()
    params: dict[str, str] = {}
    if len(parts) == 2:
        current: str | None = None
        for line in parts[1].splitlines():
            if re.match(r"^\s*(Returns|Raises|Examples?):\s*$", line):
                break
            m = re.match(r"^\s{0,8}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if m and not line.startswith(" " * 9):
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
    return description, params


def make_spec(fn: Callable[..., str], *, kind: ToolKind, name: str | None = None) -> ToolSpec:
    description, arg_help = _parse_docstring(fn.__doc__ or "")
    sig = inspect.signature(fn)
    hints = get_type_hints(fn)
    params = list(sig.parameters.values())
    if not params or params[0].name != "ctx":
        raise TypeError(f"tool {fn.__name__}: the first parameter must be `ctx: ToolContext`")
    fields: dict[str, Any] = {}
    for p in params[1:]:
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints.get(p.name, str), Field(default, description=arg_help.get(p.name)))
    model_name = "".join(w.capitalize() for w in (name or fn.__name__).split("_")) + "Args"
    args_model = create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
    return ToolSpec(name or fn.__name__, description, kind, fn, args_model)


def tool(*, kind: ToolKind, name: str | None = None) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """Register ``fn`` as a tool; the function itself is returned unchanged (``fn.spec`` is set)."""

    def deco(fn: Callable[..., str]) -> Callable[..., str]:
        spec = make_spec(fn, kind=kind, name=name)
        if spec.name in _REGISTRY and _REGISTRY[spec.name].fn is not fn:
            raise ValueError(f"tool {spec.name!r} is already registered")
        _REGISTRY[spec.name] = spec
        fn.spec = spec  # type: ignore[attr-defined]
        return fn

    return deco
