"""Twin time at a past wall moment (MTTD in twin seconds)."""

from __future__ import annotations

from itbench_agents.harness.timeline import TwinTimeline


def test_twin_time_follows_wall_time_between_samples_and_never_passes_the_next() -> None:
    tl = TwinTimeline()
    assert tl.twin_at(5.0) is None
    tl.sample(10.0, 1000.0)
    tl.sample(12.0, 1002.0)  # ticking with wall time
    tl.sample(13.0, 1603.0)  # a 600 s fast-forward happened in between
    tl.sample(20.0, 1610.0)
    assert tl.twin_at(9.0) is None
    assert tl.twin_at(11.0) == 1001.0
    assert tl.twin_at(12.5) == 1002.5  # before the jump is seen
    assert tl.twin_at(14.0) == 1604.0
    assert tl.twin_at(30.0) == 1620.0  # after the last sample: wall time keeps ticking


def test_a_standing_clock_is_not_extrapolated_past_the_next_sample() -> None:
    tl = TwinTimeline()
    tl.sample(0.0, 50.0)
    tl.sample(10.0, 50.0)  # a manual clock that did not move
    assert tl.twin_at(5.0) == 50.0
    tl.sample(9.0, 40.0)  # out of order: ignored
    assert tl.twin_at(9.5) == 50.0
