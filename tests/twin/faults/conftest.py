"""Fixtures for fault tests (helpers live in ``faultkit.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from faultkit import Cluster, make_twin

from itbench_agents.twin.instance import Twin


@pytest.fixture
def chain() -> Iterator[Cluster]:
    tw = make_twin("chain", settle=60.0)
    c = Cluster(tw)
    assert c.probe_ok(), tw.behaviour.probe()
    yield c
    tw.close()


_OTEL: dict[str, Twin] = {}


@pytest.fixture
def otel() -> Iterator[Cluster]:
    """A shared Astronomy Shop twin: each test injects, checks, fixes and must leave it healthy
    (a test that does not is followed by a fresh twin)."""
    tw = _OTEL.get("twin")
    if tw is None or not tw.behaviour.probe().ok or Cluster(tw).degraded():
        tw = make_twin("otel-demo", settle=300.0)
        _OTEL["twin"] = tw
    c = Cluster(tw)
    assert c.probe_ok() and not c.degraded(), (tw.behaviour.probe(), c.degraded())
    yield c
