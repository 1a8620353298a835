"""A table for each persona without tables of its own (a plug-in persona's): per agent, the macro
average over scenarios ± standard error of every named score its episodes carry, the episodes and the
bad runs (environment or harness errors: not scored, not in the averages), then every episode.

Rates are averaged as the CISO and FinOps tables average theirs (``named_scores.py``): an episode
without a score counts 0 for it, so an agent cannot raise a mean by leaving a score out.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..core.score import Score
from ..harness.records import EpisodeRecord
from .named_scores import episodes_html, error_lines, html_table, macro
from .tables import fmt, md_table

BUILTIN_TABLES = ("sre", "ciso", "finops")
"""The personas the report has tables of its own for (Tables 4, 5, 6)."""


def plugin_personas(records: Sequence[EpisodeRecord]) -> list[str]:
    """The personas among ``records`` without a table of their own, sorted."""
    return sorted({r.persona for r in records} - set(BUILTIN_TABLES))


def score_names(records: Sequence[EpisodeRecord]) -> list[str]:
    return sorted({k for r in records for k in r.scores})


def persona_rows(persona: str, records: Sequence[EpisodeRecord]) -> tuple[list[str], list[list[str]]]:
    mine = [r for r in records if r.persona == persona]
    names = score_names(mine)
    header = ["agent", *(f"{n} (mean ± se)" for n in names), "episodes", "bad runs"]
    rows = []
    for agent in sorted({r.agent for r in mine}):
        theirs = [r for r in mine if r.agent == agent]
        rows.append(
            [
                agent,
                *(fmt(macro(theirs, n), digits=3) for n in names),
                str(len(theirs)),
                str(sum(1 for r in theirs if not r.scored)),
            ]
        )
    return header, rows


def plugin_markdown(records: Sequence[EpisodeRecord]) -> str:
    out: list[str] = []
    for persona in plugin_personas(records):
        header, rows = persona_rows(persona, records)
        out += [
            f"## {persona} results",
            "",
            "Macro average over scenarios ± standard error of each named score (a missing score counts 0).",
            "",
            md_table(header, rows),
            *error_lines(persona, [r for r in records if r.persona == persona]),
            "",
        ]
    return "\n".join(out)


def plugin_html(records: Sequence[EpisodeRecord], links: dict[str, str]) -> str:
    out = []
    for persona in plugin_personas(records):
        header, rows = persona_rows(persona, records)
        esc = [[html.escape(c) for c in row] for row in rows]
        out.append(f"<h2 id='persona-{html.escape(persona)}'>{html.escape(persona)} results</h2>")
        out.append(html_table(header, esc))
        out.append(episodes_html(persona, [r for r in records if r.persona == persona], links, _mark))
    return "\n".join(out)


def _mark(s: Score) -> str:
    return html.escape(f"{s.value:g}")
