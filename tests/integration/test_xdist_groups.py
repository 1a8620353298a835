"""The suite's xdist groups hold: a module whose tests share one costly fixture (a batch of FinOps
episodes, a Ray cluster) marks them ``xdist_group`` so that ``--dist loadgroup`` (pyproject.toml)
sends them to one worker, which builds the fixture once. pytest 9.2 silently broke this (the
group suffix xdist puts on each node id no longer took effect, pytest-dev/pytest-xdist#1386): every
worker that got one of the tests built the fixture again, about 150 s more in the slow tier."""

from __future__ import annotations

import pytest

GROUP = "xdist-group-check"
pytestmark = pytest.mark.xdist_group(GROUP)


def test_a_grouped_test_carries_its_group_to_the_scheduler(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by an xdist worker with --dist loadgroup (e.g. -n0): no groups to keep")
    assert request.node.nodeid.endswith(f"@{GROUP}"), (
        f"{request.node.nodeid}: pytest-xdist's group suffix is missing, so tests of one xdist_group "
        "may run on several workers, each building their module fixture (pytest-dev/pytest-xdist#1386)"
    )
