"""Lines a test wants shown in the run's terminal summary (e.g. the PromQL conformance pass rate)."""

from __future__ import annotations

import pytest

REPORT_LINES = pytest.StashKey[list[str]]()
