"""Fixtures of the Prometheus-area tests: a minimal twin-like object (fixed series, manual clock, lock)."""

from __future__ import annotations

import pytest
from prom_fixtures import FakeTwin


@pytest.fixture(scope="module")
def fake_twin() -> FakeTwin:
    return FakeTwin()
