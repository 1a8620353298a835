"""Named tool sets and the ``--tools`` selection language of the agents and ``mcp serve``.

``--tools`` is a base set, then registered tools added or taken away by name, comma-separated::

    direct                 the paper's direct tools (kubectl, PromQL, LogQL, traces...)
    nl2                    the paper's NL2* tools (natural language in, a query written by a model)
    direct,+runbook        the direct tools plus the registered tool ``runbook`` (a plug-in's)
    +runbook               the same (a selection that starts with + or - starts from direct)
    nl2,-wait              the NL2* tools without ``wait``

``mcp serve`` also accepts the base ``all`` (both sets). Masked data sources (``--mask traces``)
still remove the tools that read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .registry import ToolSpec, get_tool

ToolMode = Literal["direct", "nl2"]

DIRECT = ["alerts", "kubectl", "promql", "logql", "traces", "topology", "wait"]
NL2 = ["nl2alerts", "nl2kubectl", "nl2metrics", "nl2logs", "nl2traces", "topology", "wait"]
BASES: dict[str, list[str]] = {"direct": DIRECT, "nl2": NL2, "all": list(dict.fromkeys(DIRECT + NL2))}

_MASKED_TOOLS = {
    "traces": {"traces", "nl2traces"},
    "logs": {"logql", "nl2logs"},
    "metrics": {"promql", "nl2metrics"},
}


class ToolSelectionError(ValueError):
    """A ``--tools`` value that names no base set, or a tool nothing registered."""


@dataclass(frozen=True)
class ToolSelection:
    base: str
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()

    @property
    def mode(self) -> ToolMode:
        """How the agent's tools take queries: ``nl2`` when the base set is the NL2* one."""
        return "nl2" if self.base == "nl2" else "direct"

    def names(self) -> list[str]:
        names = [n for n in BASES[self.base] if n not in self.remove]
        return names + [n for n in self.add if n not in names]


def parse_tools(text: str, bases: tuple[str, ...] = ("direct", "nl2")) -> ToolSelection:
    """``direct``, ``nl2,+runbook``, ``+runbook``... → a :class:`ToolSelection` (syntax only; the
    names are checked against the registry by :func:`toolset` / :func:`check_tools`)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ToolSelectionError(f"--tools {text!r}: expected {' or '.join(bases)}, then +NAME or -NAME")
    base = "direct"
    if parts[0][0] not in "+-":
        base = parts.pop(0)
        if base not in bases:
            raise ToolSelectionError(
                f"--tools {text!r}: the base set {base!r} is not {' or '.join(bases)} "
                "(add a registered tool with +NAME, e.g. direct,+runbook)"
            )
    add: list[str] = []
    remove: list[str] = []
    for p in parts:
        name = p[1:].strip()
        if p[0] not in "+-" or not name:
            raise ToolSelectionError(f"--tools {text!r}: {p!r} is neither +NAME nor -NAME")
        (add if p[0] == "+" else remove).append(name)
    return ToolSelection(base, tuple(add), tuple(remove))


def check_tools(text: str, bases: tuple[str, ...] = ("direct", "nl2")) -> ToolSelection:
    """Parse ``text`` and make sure every tool it names is registered (plug-ins included)."""
    from .registry import UnknownToolError

    sel = parse_tools(text, bases)
    for name in (*sel.add, *sel.remove):
        try:
            get_tool(name)
        except UnknownToolError as exc:
            raise ToolSelectionError(f"--tools {text!r}: {exc}") from None
    return sel


def toolset(selection: str | ToolSelection, masked: set[str] | None = None) -> list[ToolSpec]:
    """The tools of ``selection`` (``"direct"``, ``"nl2,+runbook"``...), minus those whose data source
    is masked (e.g. traces off)."""
    sel = parse_tools(selection, tuple(BASES)) if isinstance(selection, str) else selection
    drop: set[str] = set()
    for source in masked or set():
        drop |= _MASKED_TOOLS.get(source, set())
    return [get_tool(n) for n in sel.names() if n not in drop]
