"""Fixtures of the kube tests (helpers live in kube_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kube_helpers import Cluster, serve_cluster

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.instance import Twin


@pytest.fixture
def twin() -> Twin:
    """A bare cluster (3 nodes, system namespaces) on a manual clock."""
    return Twin(seed=7, clock=ManualClock())


@pytest.fixture
def cluster(twin: Twin, tmp_path: Path) -> Iterator[Cluster]:
    yield from serve_cluster(twin, tmp_path)
