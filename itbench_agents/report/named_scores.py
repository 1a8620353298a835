"""What the persona tables (CISO's Table 5, FinOps' Table 6) share: rates of a named score over
episodes, their macro average over scenarios, a plain HTML table, the list of episodes with errors
and the table of every episode."""

from __future__ import annotations

import html
import math
from collections import defaultdict
from collections.abc import Callable, Sequence

from ..core.score import Score
from ..harness.records import EpisodeRecord
from .aggregate import Stat


def rate(records: Sequence[EpisodeRecord], score: str) -> float:
    """The mean of a named score over episodes (an episode without it counts 0)."""
    return sum(r.scores[score].value if score in r.scores else 0.0 for r in records) / len(records)


def macro(records: Sequence[EpisodeRecord], value: str | Callable[[EpisodeRecord], float]) -> Stat:
    """The macro average over scenarios of a named score (or of ``value(record)``) over each
    scenario's scored episodes, ± the standard error across scenarios."""
    by_scenario: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.scored:
            by_scenario[r.scenario_id].append(r)
    if isinstance(value, str):
        return Stat.of([rate(rs, value) for _, rs in sorted(by_scenario.items())])
    fn = value
    return Stat.of([sum(fn(r) for r in rs) / len(rs) for _, rs in sorted(by_scenario.items())])


def html_table(header: list[str], rows: list[list[str]]) -> str:
    """A table of cells already escaped (or HTML on purpose)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def error_lines(title: str, records: Sequence[EpisodeRecord]) -> list[str]:
    """Markdown: ``## <title> episodes with errors`` and one line per episode (at most 200)."""
    errs = [r for r in records if r.error]
    if not errs:
        return []
    return [
        "",
        f"## {title} episodes with errors",
        "",
        *(f"- `{r.episode_id}` ({r.termination}): {r.error}" for r in errs[:200]),
    ]


def episodes_html(
    title: str, records: Sequence[EpisodeRecord], links: dict[str, str], mark: Callable[[Score], str]
) -> str:
    """``<h2><title> episodes</h2>`` and a row per episode: its link, termination, scores (each
    shown by ``mark``), wall seconds, error."""
    from .trajectory_html import episode_link

    rows = []
    for r in sorted(records, key=lambda r: (r.scenario_id, r.agent, r.trial)):
        marks = " ".join(f"{html.escape(k)} {mark(v)}" for k, v in r.scores.items()) or "–"
        rows.append(
            [
                episode_link(r.episode_id, links),
                html.escape(r.termination),
                marks,
                f"{r.wall_s:.1f}",
                html.escape(r.error or ""),
            ]
        )
    return f"<h2>{html.escape(title)} episodes</h2>" + html_table(
        ["episode", "termination", "scores", "wall s", "error"], rows
    )


def stat_mean(stat: Stat) -> float | None:
    """A :func:`macro` average as a plain fraction for a figure; None when there was nothing to
    average."""
    return None if math.isnan(stat.mean) else float(stat.mean)
