"""Backends through the backend registry (issue 30): a backend from an installed package's
``itbench_agents.backends`` entry point is listed, passes ``itbench backends check`` and serves
``itbench run --backend NAME``; unknown and broken ones are refused with the reason. The package is
the example plug-in's ``small-twin`` (the twin on two nodes), installed as a fake distribution."""

from __future__ import annotations

import json
from pathlib import Path

from fake_dist import install_fake
from typer.testing import CliRunner

from itbench_agents.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/plugin/itbench_example_plugin"
SCENARIO = "sre/ad-scaled-to-zero-v1"


def install_example(root: Path) -> None:
    install_fake(
        root,
        """
        [itbench_agents.backends]
        small-twin = fakeplug_backend:SmallTwin
        twin = fakeplug_backend:SmallTwin
        gone = fakeplug_missing:Backend
        """,
        {"fakeplug_backend": (EXAMPLE / "backend.py").read_text()},
    )


def test_a_plugin_backend_is_listed_checked_and_serves_a_run(fresh: Path, tmp_path: Path) -> None:
    install_example(fresh)
    cli = CliRunner()
    rows = {r["name"]: r for r in json.loads(cli.invoke(app, ["backends", "list", "--json"]).output)}
    assert rows["twin"]["source"] == "built-in"  # a plug-in cannot take a built-in's name
    assert rows["small-twin"]["source"] == "plug-in: fake-plugin 0.1" and rows["small-twin"]["available"]
    assert not rows["gone"]["available"] and "fakeplug_missing" in rows["gone"]["error"]

    checked = cli.invoke(app, ["backends", "check", "small-twin", "--json"])
    assert checked.exit_code == 0, checked.output
    (report,) = json.loads(checked.output)
    assert report["backend"] == "small-twin" and report["ok"] and len(report["checks"]) >= 10

    run = tmp_path / "run"
    res = cli.invoke(
        app, ["run", "-s", SCENARIO, "--agent", "oracle", "--backend", "small-twin", "--run-dir", str(run)]
    )
    assert res.exit_code == 0, res.output
    (record,) = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert record["error"] is None and record["mitigation"]["passed"], record
    assert json.loads((run / "run.json").read_text())["config"]["backend"] == "small-twin"
    (topology,) = run.glob("episodes/*/topology.json")
    nodes = [n for n in json.loads(topology.read_text())["nodes"] if n.startswith("node/")]
    assert len(nodes) == 2  # the plug-in's cluster served the episode


def test_unknown_broken_and_misused_backends_are_refused(fresh: Path, tmp_path: Path) -> None:
    install_example(fresh)
    cli = CliRunner()
    base = ["run", "--agent", "noop", "--run-dir", str(tmp_path / "run")]
    res = cli.invoke(app, [*base, "-s", SCENARIO, "--backend", "nope"])
    assert res.exit_code == 2 and "unknown backend 'nope' (known: twin, live, gone, small-twin)" in res.output
    res = cli.invoke(app, [*base, "-s", SCENARIO, "--backend", "gone"])
    assert res.exit_code == 2 and "backend 'gone'" in res.output and "does not load" in res.output
    res = cli.invoke(app, [*base, "-s", "ciso/kyverno-seccomp-v1", "--backend", "small-twin"])
    assert res.exit_code == 2 and "in their persona's own environment" in res.output
    assert cli.invoke(app, ["backends", "check", "nope"]).exit_code == 2
    assert not (tmp_path / "run").exists()
