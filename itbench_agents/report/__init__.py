"""Reports of run folders (``itbench report``, ``itbench compare``) and their tables as pandas
DataFrames: ``from itbench_agents.report import load_runs`` (``frames.py``; pandas is loaded on first
use, not when a report module is imported)."""

from __future__ import annotations

from typing import Any

__all__ = ["RunFrames", "load_runs"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import frames

        return getattr(frames, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
