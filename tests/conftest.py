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
# built-ins only: a plug-in installed into this environment (docs/extending.md §5) must not change
# the library the tests count; tests/plugins switches them back on where it tests them
os.environ["ITBENCH_PLUGINS"] = "off"

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (upstream conformance data and manifests); tests that need it skip without it."""
    if not SHARED.is_dir():
        pytest.skip(f"upstream test data not found at {SHARED} (the ../shared folder beside the checkout)")
    return SHARED


@pytest.fixture(autouse=True)
def _own_kubectl_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own kubectl cache (``KUBECACHEDIR``). kubectl keeps discovery for hours
    under ``~/.kube/cache/discovery/<host_port>``, and served twins reuse ports: a twin that served
    Kyverno's CRDs on a port would otherwise tell the next test's kubectl, on that port, that
    ClusterPolicy exists where it does not."""
    monkeypatch.setenv("KUBECACHEDIR", str(tmp_path_factory.mktemp("kubecache", numbered=True)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long end-to-end tests (marked ``slow``) first, the longest timeouts (whole-library runs) first of
    all: pytest-xdist deals them out to its workers at once, and the tail of the run is short tests
    that balance the workers, not one worker left alone with a long test."""

    def timeout(item: pytest.Item) -> float:
        mark = item.get_closest_marker("timeout")
        return float(mark.args[0]) if mark and mark.args else 0.0

    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -timeout(item)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its summary lines to the controller (``workeroutput``)."""
    from support.report_stash import REPORT_LINES

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["itbench_report_lines"] = session.config.stash.get(REPORT_LINES, [])


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_WorkerLines(config), "itbench-worker-lines")


class _WorkerLines:
    """On the xdist controller: collect the summary lines each worker sent when it finished."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_testnodedown(self, node: object, error: object) -> None:
        from support.report_stash import REPORT_LINES

        lines = getattr(node, "workeroutput", {}).get("itbench_report_lines", [])
        self.config.stash.setdefault(REPORT_LINES, []).extend(lines)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print what tests stashed for the summary (so CI output shows, e.g., the PromQL conformance rate)."""
    from support.report_stash import REPORT_LINES

    lines = config.stash.get(REPORT_LINES, [])
    if lines:
        terminalreporter.section("itbench reports")
        for line in lines:
            terminalreporter.write_line(line)
