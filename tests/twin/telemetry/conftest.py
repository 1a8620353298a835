"""Fixtures for the telemetry tests; the builders live in ``telemetry_fixtures.py`` (a unique module
name, so this folder's tests can run together with other folders that have their own conftest)."""

from __future__ import annotations

import pytest
from telemetry_fixtures import FakeTwin, build_shop


@pytest.fixture
def shop() -> FakeTwin:
    """Three healthy services with one pod each, 1 h of history, telemetry installed."""
    return build_shop(seed=0)
