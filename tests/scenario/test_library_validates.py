"""CI gate: every SRE scenario of the library validates on the twin (`itbench scenarios validate
--suite sre`).

Slow (minutes on 2 cores): it deploys the twin, injects, waits for the alerts, applies the reference
mitigation and checks the probe for each SRE scenario. The FinOps cost incidents, which share the
format, are validated by `.ci/run` after the test suite (`validate --suite finops`), as the rhel-opa
CISO scenarios are: each takes a week of cost history, and the suite has a time budget.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.xdist_group("library")  # one worker for both; the README main job on the other
def test_every_scenario_validates_on_the_twin() -> None:
    try:
        from itbench_agents.twin.instance import Twin

        Twin.for_app("otel-demo", history_s=0).close()
    except Exception as e:  # the twin's parts are built by other areas
        pytest.skip(f"the otel-demo twin does not start here: {type(e).__name__}: {e}")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "itbench_agents.cli",
            "scenarios",
            "validate",
            "--suite",
            "sre",
            "--jobs",
            "2",
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=880,
    )
    results = json.loads(r.stdout)
    failed = {
        x["scenario_id"]: [f"{c['name']}: {c['detail']}" for c in x["checks"] if not c["ok"]]
        for x in results
        if not x["ok"]
    }
    assert not failed, json.dumps(failed, indent=1)
    assert r.returncode == 0 and len(results) >= 43
    assert all(x["scenario_id"].startswith("sre/") for x in results)
