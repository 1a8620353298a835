"""What the persona tables (CISO's Table 5, FinOps' Table 6) share: rates of a named score over
episodes, their macro average over scenarios, and a plain HTML table."""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable, Sequence

from ..evaluation.aggregate import Stat
from ..harness.records import EpisodeRecord


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
