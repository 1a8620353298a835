"""Prometheus' own PromQL acceptance scripts (../shared/conformance/promql/*.test) through our runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.report_stash import REPORT_LINES

from itbench_dev.prometheus.conformance import run_dir, run_script, summary

CONFORMANCE = Path(__file__).resolve().parents[3].parent / "shared" / "conformance" / "promql"


def test_upstream_conformance_pass_rate(pytestconfig: pytest.Config) -> None:
    if not list(CONFORMANCE.glob("*.test")):
        pytest.skip(f"upstream PromQL test scripts not found in {CONFORMANCE}")
    reports = run_dir(CONFORMANCE)
    lines = [
        f"{r.file:28} pass {r.passed:4} fail {r.failed:4} skip {r.skipped:4} "
        f"(native histograms {r.skipped_nh}) rate {r.rate():.3f}"
        for r in reports
    ]
    s = summary(reports)
    lines.append(
        f"TOTAL pass {s['passed']:.0f} fail {s['failed']:.0f} (unsupported features and missing or "
        f"unexpected warn/info annotations count as failures) skipped {s['skipped']:.0f} (native "
        f"histograms {s['skipped_native_histogram']:.0f}); pass rate of all non-native-histogram cases "
        f"{s['rate_non_nh']:.3f}"
    )
    # shown in the run's terminal summary (tests/conftest.py), so CI output carries the pass rate
    pytestconfig.stash.setdefault(REPORT_LINES, []).extend(["PromQL conformance (upstream scripts):", *lines])
    assert s["passed"] > 800
    assert s["skipped"] == s["skipped_native_histogram"]  # only native histograms may be skipped
    assert s["rate_non_nh"] >= 0.98  # of all non-native-histogram cases (unsupported ones count as failed)


SCRIPT = """
load 5m
    http_requests{job="api", instance="0"} 0+10x10
    http_requests{job="api", instance="1"} 0+20x10

eval instant at 50m sum(http_requests)
    {} 300

eval instant at 50m http_requests{instance="1"}
    http_requests{job="api", instance="1"} 999

eval instant at 50m nonsense(
    expect fail

eval range from 0 to 10m step 5m http_requests{instance="0"}
    http_requests{job="api", instance="0"} 0 10 20
"""


def test_runner_detects_wrong_expectations() -> None:
    rep = run_script(SCRIPT, "inline")
    statuses = [r.status for r in rep.results]
    assert statuses == ["pass", "fail", "pass", "pass"]
    assert "expected 999" in rep.results[1].reason


def test_the_cli_prints_json_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``python -m itbench_dev promql-conformance DIR --json``: per file and in total, exit 1 below 90%."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "inline.test").write_text(SCRIPT)
    res = subprocess.run(
        [sys.executable, "-m", "itbench_dev", "promql-conformance", str(tmp_path), "--json"],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=120,
    )
    body = json.loads(res.stdout)
    assert body["files"][0]["file"] == "inline.test"
    assert (body["total"]["passed"], body["total"]["failed"]) == (3, 1)
    assert res.returncode == 1  # 75% < 90%
