"""The package's optional extras (pyproject.toml) and the error that names the one to install.

The twin, the harness, the scorers and the non-LLM baselines need none of them (an import-linter
contract keeps it so); the LLM agents and the model layer need ``agents``, ``itbench mcp serve``
needs ``mcp``, ``--executor ray`` needs ``ray``. What needs an extra calls :func:`require_extra` before it imports the extra's
modules, so a missing one is one sentence that says what to install rather than a traceback.
"""

from __future__ import annotations

import importlib.util

EXTRAS: dict[str, tuple[str, ...]] = {
    "agents": ("langgraph", "langchain_core", "langchain_openai", "langchain_litellm", "litellm"),
    "mcp": ("mcp",),
    "ray": ("ray",),
}
"""Extra → the top-level modules its distributions provide (pyproject.toml's optional-dependencies)."""


class MissingExtraError(ImportError):
    """Something needs an optional extra that is not installed."""

    def __init__(self, extra: str, what: str, missing: list[str]) -> None:
        self.extra = extra
        self.what = what
        self.missing = missing
        super().__init__(
            f"{what} needs the optional dependencies of itbench-agents[{extra}] "
            f"(not installed: {', '.join(missing)}): pip install 'itbench-agents[{extra}]' "
            f"(in a checkout, `uv sync` installs every extra)"
        )


def missing_modules(extra: str) -> list[str]:
    """The extra's modules that cannot be imported here (empty: the extra is installed)."""
    if extra not in EXTRAS:
        raise KeyError(f"unknown extra {extra!r} (known: {', '.join(sorted(EXTRAS))})")
    missing = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing


def require_extra(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` when any of its modules is missing."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtraError(extra, what, missing)
