"""Prompt templates (Jinja2 files under ``prompts/``), rendered with StrictUndefined."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..paths import prompts_dir


@lru_cache(maxsize=1)
def _env() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(prompts_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, **variables: Any) -> str:
    """Render ``prompts/<name>`` (e.g. ``sre_react/diagnosis.md.j2``)."""
    return str(_env().get_template(name).render(**variables)).strip()
