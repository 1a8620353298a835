"""The report's figures (``report/figures.py``): percentiles over the episodes that ran, and SVG that
draws what it is given."""

from __future__ import annotations

import math

import pytest
from support.episode_records import episode

from itbench_agents.report.figures import pass_at_k_svg, percentile_svg, percentiles, rate_bars_svg


def test_percentiles_are_over_the_episodes_that_ran() -> None:
    recs = []
    for i, wall in enumerate([1.0, 2.0, 3.0, 4.0, 100.0]):
        r = episode("sre/x", "a", True, True, trial=i)
        r.timing.agent_wall_s = wall
        recs.append(r)
    crashed = episode("sre/x", "a", False, False, trial=9, termination="harness_error")
    crashed.timing.agent_wall_s = 1e6  # never ran: not a latency
    never = episode("sre/x", "b", False, False)
    never.timing.agent_wall_s = math.inf
    got = percentiles([*recs, crashed, never], lambda r: r.timing.agent_wall_s)
    assert set(got) == {"a"}
    p50, p95, n = got["a"]
    assert (p50, n) == (3.0, 5) and p95 == pytest.approx(80.8)


def test_the_figures_draw_their_labels_as_text() -> None:
    curves = {
        "react": {
            "diagnosis": {"pass@k": [0.5, 0.75], "pass^k": [0.5, 0.25]},
            "mitigation": {"pass@k": [0.25, None], "pass^k": [0.25, None]},
        }
    }
    svg = pass_at_k_svg(curves, [1, 2])
    assert svg.startswith("<svg") and ">react</text>" in svg and "<script" not in svg
    assert ">pass@k (one of k)</text>" in svg and ">pass^k (all k)</text>" in svg
    bars = rate_bars_svg("bucket", {("easy", "react"): (1.0, 0.5), ("hard", "react"): (0.0, None)})
    assert ">easy</text>" in bars and ">hard</text>" in bars and ">mitigation pass@1 by bucket</text>" in bars
    lat = percentile_svg([("agent wall time, s", {"react": (3.0, 9.0, 4)}), ("tokens", {})])
    assert ">react (n=4)</text>" in lat and ">tokens</text>" in lat
