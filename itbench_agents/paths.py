"""Where the project's data folders are: a source checkout or an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _data_root(name: str) -> Path:
    checkout = _PKG.parent / name
    if checkout.is_dir():
        return checkout
    return _PKG / "_data" / name


def scenarios_dir() -> Path:
    """``scenarios/``: scenario specs, app models (``apps/``) and alert rules (``rules/``)."""
    return _data_root("scenarios")


def prompts_dir() -> Path:
    """``prompts/``: prompt templates of the baseline agents."""
    return _data_root("prompts")
