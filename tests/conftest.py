"""Suite-wide test settings: offline LLM libraries, paths to the shared conformance data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
# every verdict and effect the twin keeps instead of recomputing is checked against a fresh
# computation (twin/runtime.py VERIFY_ENV); a stale one raises StaleCacheError and fails the test
os.environ.setdefault("ITBENCH_TWIN_VERIFY_VERDICTS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (upstream conformance data and manifests); tests that need it skip without it."""
    if not SHARED.is_dir():
        pytest.skip(f"upstream test data not found at {SHARED} (the ../shared folder beside the checkout)")
    return SHARED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print what tests stashed for the summary (so CI output shows, e.g., the PromQL conformance rate)."""
    from report_stash import REPORT_LINES

    lines = config.stash.get(REPORT_LINES, [])
    if lines:
        terminalreporter.section("itbench reports")
        for line in lines:
            terminalreporter.write_line(line)
