"""The run's final line and progress bar count each agent's passes apart (issue 17): an oracle's
passes added to a noop's would read as one agent passing half the time."""

from __future__ import annotations

import io

from rich.console import Console
from support.episode_records import episode

from itbench_agents.harness.batch import BatchSummary
from itbench_agents.harness.progress import BatchProgress
from itbench_agents.harness.records import EpisodeRecord


def _rec(sid: str, agent: str, ok: bool) -> EpisodeRecord:
    return episode(sid, agent, ok, ok)


def _summary(*recs: EpisodeRecord) -> BatchSummary:
    s = BatchSummary()
    for r in recs:
        s.add(r)
    return s


def test_one_agent_keeps_the_plain_counts() -> None:
    s = _summary(_rec("s1", "oracle", True), _rec("s2", "oracle", False))
    assert s.counts() == "diagnosis 1/2, mitigation 1/2"


def test_several_agents_are_counted_apart() -> None:
    s = _summary(
        _rec("s1", "oracle", True),
        _rec("s1", "noop", False),
        _rec("s2", "oracle", True),
        _rec("s2", "noop", False),
    )
    assert s.counts() == "oracle: diagnosis 2/2, mitigation 2/2; noop: diagnosis 0/2, mitigation 0/2"
    assert s.diagnosis_pass == 2 and s.ran == 4  # the batch's own totals are unchanged


def test_the_progress_bar_shows_each_agent() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    s = BatchSummary()
    with BatchProgress(console, total=2) as progress:
        for r in (_rec("s1", "oracle", True), _rec("s1", "noop", False)):
            s.add(r)
            progress.update(r, s)
        desc = progress.progress.tasks[0].description
    assert "oracle" in desc and "noop" in desc
    assert "diag 1/1" in desc and "diag 0/1" in desc and "diag 1/2" not in desc


def test_a_logged_episode_line_is_one_line_whatever_its_length() -> None:
    """Not a terminal (a log, CI): one line per episode, never folded at rich's 80 columns (a
    grep for an episode's verdict finds it)."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=80)
    rec = _rec("sre/a-rather-long-scenario-name-that-runs-past-eighty-columns-v1", "sre-heuristic", True)
    with BatchProgress(console, total=1) as progress:
        progress.update(rec, _summary(rec))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith(rec.episode_id) and lines[0].endswith("mitig ✓"), lines
