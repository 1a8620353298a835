"""Where a goal says the app runs. Each persona words its own goal (``Persona.twin_extension``:
``personas/sre/twin_extension.py``, ``personas/finops/twin_extension.py``); the harness has none."""

from __future__ import annotations


def in_namespaces(namespaces: list[str]) -> str:
    """``namespace a`` or ``namespaces a and b`` (``a, b and c``): where a goal says the app runs."""
    if len(namespaces) == 1:
        return f"namespace {namespaces[0]}"
    return f"namespaces {', '.join(namespaces[:-1])} and {namespaces[-1]}"
