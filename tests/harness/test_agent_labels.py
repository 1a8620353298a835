"""``--label``: readable names for the agents of a run (issue 17), in tables, records and episode
folders; two agents can never end up under one name."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.harness.runfolder import read_episodes

SCENARIO = ["--suite", "finops", "-s", "finops/anomaly-spike-family*"]


def test_labels_name_the_agents_everywhere(tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "run",
            *SCENARIO,
            "-a",
            "oracle",
            "-a",
            "oracle",
            "--label",
            "reference",
            "--label",
            "reference, again",
        ]
        + ["--run-dir", str(run)],
    )
    assert res.exit_code == 0, res.output
    assert "reference: anomaly pinpointed 1/1; reference, again: anomaly pinpointed 1/1" in res.output
    assert sorted(r.agent for r in read_episodes(run)) == ["reference", "reference, again"]
    assert sorted(p.name for p in (run / "episodes").iterdir()) == [
        "anomaly-spike-family-v1__reference-again__t000",
        "anomaly-spike-family-v1__reference__t000",
    ]
    assert "| reference, again |" in (run / "report.md").read_text()


def test_agents_that_would_share_a_name_are_refused(tmp_path: Path) -> None:
    run = ["--run-dir", str(tmp_path / "run")]
    same = CliRunner().invoke(app, ["run", *SCENARIO, "-a", "noop", "-a", "noop", *run])
    assert same.exit_code == 2 and "two agents would share the label 'noop'" in same.output
    slug = CliRunner().invoke(
        app, ["run", *SCENARIO, "-a", "noop", "-a", "oracle", "--label", "a b", "--label", "a-b", *run]
    )
    assert slug.exit_code == 2 and "'a-b' (as 'a b')" in slug.output
    count = CliRunner().invoke(app, ["run", *SCENARIO, "-a", "noop", "-a", "oracle", "--label", "x", *run])
    assert count.exit_code == 2 and "1 given for 2 agent(s)" in count.output
    empty = CliRunner().invoke(app, ["run", *SCENARIO, "-a", "noop", "--label", " ", *run])
    assert empty.exit_code == 2 and "cannot be empty" in empty.output
    assert not (tmp_path / "run").exists()
