"""The CLI surface: help with env vars, bad input → clear errors and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from itbench_agents.cli import app

runner = CliRunner()


def test_run_help_lists_env_vars() -> None:
    r = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    for var in (
        "ITBENCH_SUITE",
        "ITBENCH_AGENT",
        "ITBENCH_TRIALS",
        "ITBENCH_CONCURRENCY",
        "ITBENCH_MASK",
        "ITBENCH_RUN_DIR",
    ):
        assert var in r.output


def test_unknown_scenario_and_agent_are_clear_errors(tmp_path: Path) -> None:
    r = runner.invoke(
        app,
        ["run", "--scenario", "sre/ad-failur-flag-v1", "--agent", "noop", "--run-dir", str(tmp_path / "r")],
    )
    assert r.exit_code == 2 and "did you mean sre/ad-failure-flag-v1" in r.output
    r = runner.invoke(app, ["run", "--suite", "sre", "--agent", "orcale", "--run-dir", str(tmp_path / "r")])
    assert r.exit_code == 2 and "did you mean oracle" in r.output
    r = runner.invoke(
        app, ["run", "--suite", "sre", "--agent", "sre-react", "--run-dir", str(tmp_path / "r")]
    )
    assert r.exit_code == 2 and "needs --model" in r.output
    r = runner.invoke(
        app,
        ["run", "--suite", "sre", "--agent", "noop", "--mask", "tracez", "--run-dir", str(tmp_path / "r")],
    )
    assert r.exit_code == 2 and "--mask" in r.output


def test_scenarios_list_show_and_validate_errors() -> None:
    r = runner.invoke(app, ["scenarios", "list", "--json", "--tag", "flagd"])
    assert r.exit_code == 0
    rows = json.loads(r.output)
    assert len(rows) >= 12 and all("flagd" in row["tags"] for row in rows)
    r = runner.invoke(app, ["scenarios", "show", "sre/ad-failure-flag-v1"])
    assert r.exit_code == 0 and "adFailure" in r.output
    r = runner.invoke(app, ["scenarios", "show", "sre/nope-v1"])
    assert r.exit_code == 2 and "unknown scenario" in r.output
    r = runner.invoke(app, ["scenarios", "validate"])
    assert r.exit_code == 2 and "--all" in r.output


def test_tables_are_whole_when_piped() -> None:
    """Issue 27: piped, Rich cut tables to 80 columns (ids became ``sre/acco…``)."""
    from itbench_agents.scenario.registry import ScenarioRegistry

    r = runner.invoke(app, ["scenarios", "list"])  # CliRunner's output is not a terminal
    assert r.exit_code == 0
    assert "…" not in r.output
    for sid in ScenarioRegistry.default().ids():
        assert sid in r.output
    r = runner.invoke(app, ["agents", "list"])
    assert "…" not in r.output and "audit-blanket-vandal" in r.output


def test_scenario_narrows_the_suite() -> None:
    """Issue 27: ``-s`` with ``--suite`` was a silent union that ran the whole suite."""
    r = runner.invoke(
        app, ["run", "--suite", "sre:flagd", "-s", "sre/ad-scaled-to-zero-v1", "--agent", "noop"]
    )
    assert r.exit_code == 2 and "not in suite 'sre:flagd'" in r.output


def test_agents_list_json() -> None:
    r = runner.invoke(app, ["agents", "list", "--json"])
    names = {a["name"] for a in json.loads(r.output)}
    assert {"oracle", "noop", "command", "sre-react", "sre-heuristic"} <= names


def test_score_and_report_refuse_a_non_run_folder(tmp_path: Path) -> None:
    r = runner.invoke(app, ["score", str(tmp_path)])
    assert r.exit_code == 2 and "not a run folder" in r.output
    r = runner.invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 2 and "not a run folder" in r.output


def test_published_schemas_are_current() -> None:
    from itbench_agents.commands.schemas import render, schemas

    folder = Path(__file__).resolve().parents[2] / "docs" / "schemas"
    for name, schema in schemas().items():
        assert (folder / name).read_text() == render(schema), (
            f"regenerate: python -m itbench_agents.commands.schemas ({name})"
        )


def test_run_end_to_end_with_agent_config_and_resume_via_cli(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = [
        "run",
        "-s",
        "sre/ad-failure-flag-v1",
        "-a",
        "itbench_fakes:good",
        "--environment",
        "itbench_fakes:make_env",
        "--agent-option",
        "delay=0.01",
        "--tool-model",
        "openai/gpt-4o-mini",
        "--run-dir",
        str(run_dir),
        "--trials",
        "2",
    ]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    manifest = json.loads((run_dir / "run.json").read_text())
    agent = manifest["config"]["agents"][0]
    assert agent["options"] == {"delay": "0.01"} and agent["config"]["tool_model"] == "openai/gpt-4o-mini"
    assert (run_dir / "report.html").exists() and (run_dir / "report.md").exists()
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "2 already done" in again.output
    resumed = runner.invoke(app, ["run", "--resume", str(run_dir), "--no-report"])
    assert resumed.exit_code == 0 and "2 already done" in resumed.output
    scored = runner.invoke(app, ["score", str(run_dir), "--dry-run", "--json"])
    assert scored.exit_code == 0, scored.output
    [row] = json.loads(scored.output[scored.output.index("{") :])["overall"]
    assert row["episodes"] == 2 and row["diagnosis"]["n"] == 1  # one scenario (its two trials)
    bad = runner.invoke(app, [*args[:-4], "--tools", "magic", "--run-dir", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--tools" in bad.output


@pytest.mark.slow
def test_bad_model_settings_fail_before_the_run_starts(tmp_path: Path) -> None:
    """Unknown model strings, missing keys and unreachable servers: one clear error, no run folder."""
    folder = tmp_path / "r"
    base = ["run", "--scenario", "sre/ad-scaled-to-zero-v1", "--agent", "sre-react", "--run-dir", str(folder)]
    r = runner.invoke(app, [*base, "--model", "gpt-4o"])
    assert r.exit_code == 2 and "not a litellm model string" in r.output
    r = runner.invoke(app, [*base, "--model", "openai/x", "--base-url", "http://127.0.0.1:9/v1"])
    assert r.exit_code == 2 and "cannot connect to 127.0.0.1:9" in r.output
    r = runner.invoke(
        app, [*base, "--model", "openai/x", "--api-key-env", "ITBENCH_TEST_SURELY_UNSET_KEY"], env={}
    )
    assert r.exit_code == 2 and "ITBENCH_TEST_SURELY_UNSET_KEY" in r.output
    assert not folder.exists()


def test_your_own_scenarios_from_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: scenarios loaded only from the package's folder. ``--scenarios-dir`` (or
    ``ITBENCH_SCENARIO_PATH``) adds a folder; the run remembers it, so ``--resume`` finds it."""
    from itbench_agents.paths import scenarios_dir

    monkeypatch.setenv("ITBENCH_SCENARIO_PATH", "")  # restored (unset) after the test
    mine = tmp_path / "mine"
    mine.mkdir()
    text = (scenarios_dir() / "sre" / "ad-scaled-to-zero.yaml").read_text()
    (mine / "my-ad-outage.yaml").write_text(text.replace("sre/ad-scaled-to-zero-v1", "sre/my-ad-outage-v1"))

    r = runner.invoke(app, ["scenarios", "list", "--json", "--scenarios-dir", str(mine)])
    assert r.exit_code == 0, r.output
    assert "sre/my-ad-outage-v1" in {row["id"] for row in json.loads(r.output)}
    monkeypatch.setenv("ITBENCH_SCENARIO_PATH", "")

    run_dir = tmp_path / "run"
    base = ["run", "-s", "sre/my-ad-outage-v1", "-a", "itbench_fakes:good"]
    base += ["--environment", "itbench_fakes:make_env", "--no-report"]
    r = runner.invoke(app, [*base, "--run-dir", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown scenario 'sre/my-ad-outage-v1'" in r.output  # not without it
    r = runner.invoke(app, [*base, "--scenarios-dir", str(mine), "--run-dir", str(run_dir)])
    assert r.exit_code == 0, r.output
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["config"]["scenario_dirs"] == [str(mine.resolve())]
    monkeypatch.setenv("ITBENCH_SCENARIO_PATH", "")
    resumed = runner.invoke(app, ["run", "--resume", str(run_dir), "--no-report"])
    assert resumed.exit_code == 0 and "1 already done" in resumed.output, resumed.output

    monkeypatch.setenv("ITBENCH_SCENARIO_PATH", "")
    r = runner.invoke(app, ["scenarios", "list", "--scenarios-dir", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such scenario folder" in r.output
    monkeypatch.setenv("ITBENCH_SCENARIO_PATH", "")
    (mine / "ad-scaled-to-zero.yaml").write_text(text)  # the library's own id again
    r = runner.invoke(app, ["scenarios", "list", "--scenarios-dir", str(mine)])
    assert r.exit_code == 2 and "duplicate id sre/ad-scaled-to-zero-v1" in r.output


def test_a_model_names_only_the_agents_that_use_one(tmp_path: Path) -> None:
    """`--agent sre-react --agent noop --model X`: noop does not become `noop:X` in the tables; a
    plug-in agent, which may use the model, keeps it."""
    script = tmp_path / "turns.yaml"
    script.write_text("- content: '{}'\n")
    run_dir = tmp_path / "run"
    r = runner.invoke(
        app,
        ["run", "-s", "sre/ad-failure-flag-v1", "-a", "noop", "-a", "itbench_fakes:good",
         "--model", f"scripted:{script}", "--environment", "itbench_fakes:make_env",
         "--run-dir", str(run_dir), "--no-report"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    agents = json.loads((run_dir / "run.json").read_text())["config"]["agents"]
    assert [(a["name"], a["model"]) for a in agents] == [
        ("noop", None),
        ("itbench_fakes:good", f"scripted:{script}"),
    ]
    labels = {json.loads(line)["agent"] for line in (run_dir / "episodes.jsonl").read_text().splitlines()}
    assert labels == {"noop", f"itbench_fakes:good:scripted:{script}"}
