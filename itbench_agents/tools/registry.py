"""The tool registry: every tool by name — the package's own (its modules imported on first use)
and installed packages' (``itbench_agents.tools`` entry points, ``itbench_agents/plugins.py``), with
where each came from and why a plug-in did not load. What a tool is, and ``@tool``, are
``spec.py`` (re-exported here: plug-ins write ``from itbench_agents.tools.registry import tool``).
"""

from __future__ import annotations

from . import spec as _spec
from .spec import ToolError, ToolKind, ToolResult, ToolSpec, UnknownToolError, make_spec, tool

__all__ = [
    "ToolError",
    "ToolKind",
    "ToolResult",
    "ToolSpec",
    "UnknownToolError",
    "all_tools",
    "broken_plugins",
    "get_tool",
    "make_spec",
    "tool",
    "tool_source",
]

_SOURCES: dict[str, str] = {}
"""Where a tool came from, when not from this package or a plain in-process ``@tool``."""
_BROKEN: dict[str, str] = {}
_PLUGINS_LOADED = False


def _load_builtin() -> None:
    from . import alerts, analysis, kubectl, logql, nl2, opencost, promql, topology, traces, wait  # noqa: F401

    _load_plugins()


def _load_plugins() -> None:
    """Register the tools of installed packages' entry points (once per process). An entry point
    names a ``@tool`` function (or a :class:`ToolSpec`) whose tool name is the entry point's name.
    A plug-in that does not load is set aside with its reason (:func:`broken_plugins`), so one broken
    package does not take the built-in tools down with it; asking for it by name raises the reason."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from ..plugins import TOOLS_GROUP, PluginError, plugins

    for p in plugins(TOOLS_GROUP):
        try:
            obj = p.load()
        except PluginError as exc:
            _BROKEN[p.name] = str(exc)
            continue
        spec = obj if isinstance(obj, ToolSpec) else getattr(obj, "spec", None)
        where = f"plug-in tool {p.name!r} ({p.value}, from {p.distribution})"
        if not isinstance(spec, ToolSpec):
            _BROKEN[p.name] = f"{where} is not a function decorated with @tool(kind=...) nor a ToolSpec"
        elif spec.name != p.name:
            _BROKEN[p.name] = f"{where} registers a tool named {spec.name!r}: the names must agree"
        elif _spec._REGISTRY.setdefault(spec.name, spec) is not spec:
            _BROKEN[p.name] = f"{where} has the name of a tool that exists ({tool_source(spec.name)})"
        else:
            _SOURCES[spec.name] = p.source


def broken_plugins() -> dict[str, str]:
    """Plug-in tools that did not load, by entry point name, with the reason."""
    _load_builtin()
    return dict(_BROKEN)


def tool_source(name: str) -> str:
    """``built-in``, ``plug-in: <package> <version>`` or the module that registered it."""
    if name in _SOURCES:
        return _SOURCES[name]
    module = _spec._REGISTRY[name].fn.__module__
    return "built-in" if module.startswith("itbench_agents.") else f"registered by {module}"


def get_tool(name: str) -> ToolSpec:
    _load_builtin()
    if name in _spec._REGISTRY:
        return _spec._REGISTRY[name]
    if name in _BROKEN:
        raise UnknownToolError(_BROKEN[name])
    import difflib

    close = difflib.get_close_matches(name, list(_spec._REGISTRY), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownToolError(
        f"unknown tool {name!r}{hint} (known: {', '.join(sorted(_spec._REGISTRY))}; see `itbench tools list`)"
    )


def all_tools() -> dict[str, ToolSpec]:
    _load_builtin()
    return dict(_spec._REGISTRY)
