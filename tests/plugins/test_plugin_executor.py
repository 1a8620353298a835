"""Executors through the executor registry (issue 30): the built-ins by name with ``itbench run
--executor``, one from an installed package's ``itbench_agents.executors`` entry point, and unknown,
broken and misused ones refused before a run folder is made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_dist import install_fake
from typer.testing import CliRunner

from itbench_agents.cli import app

SCENARIO = "sre/ad-scaled-to-zero-v1"

COUNTING = """
import json
import os
from pathlib import Path

from itbench_agents.harness.executors import InProcessExecutor


class Counting:
    name = "counting"

    def __init__(self, request):
        self.inner = InProcessExecutor()
        self.log = Path(os.environ["FAKE_EXECUTOR_LOG"])
        self.request = request

    def run(self, units, finish):
        self.log.write_text(json.dumps({"units": len(units), "concurrency": self.request.concurrency,
                                        "run_dir": str(self.request.run_dir)}))
        return self.inner.run(units, finish)


def not_an_executor(request):
    return object()
"""


def install(root: Path) -> None:
    install_fake(
        root,
        """
        [itbench_agents.executors]
        counting = fakeplug_executor:Counting
        processes = fakeplug_executor:Counting
        hollow = fakeplug_executor:not_an_executor
        gone = fakeplug_missing:make
        """,
        {"fakeplug_executor": COUNTING},
    )


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.slow  # whole episodes
def test_a_plugin_executor_is_listed_and_runs_the_batch(fresh: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    install(fresh)
    log = tmp_path / "executor.json"
    monkeypatch.setenv("FAKE_EXECUTOR_LOG", str(log))
    cli = CliRunner()
    rows = {r["name"]: r for r in json.loads(cli.invoke(app, ["executors", "list", "--json"]).output)}
    assert [n for n in rows if rows[n]["source"] == "built-in"] == [
        "in-process",
        "processes",
        "processes-shipped",
        "ray",
    ]
    assert rows["counting"]["source"] == "plug-in: fake-plugin 0.1" and rows["counting"]["available"]
    assert not rows["gone"]["available"] and "fakeplug_missing" in rows["gone"]["error"]

    run = tmp_path / "run"
    res = cli.invoke(
        app, ["run", "-s", SCENARIO, "--agent", "oracle", "--agent", "noop", "--executor", "counting",
              "--run-dir", str(run)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(log.read_text()) == {"units": 2, "concurrency": 1, "run_dir": str(run.resolve())}
    by_agent = {r["agent"]: r for r in records(run)}
    assert by_agent["oracle"]["mitigation"]["passed"] and not by_agent["noop"]["mitigation"]["passed"]


@pytest.mark.slow  # whole episodes
def test_processes_shipped_writes_the_same_run_folder(tmp_path: Path) -> None:
    """The built-in that ships episode folders back (as an executor on other machines must)."""
    cli = CliRunner()
    runs = {}
    for executor in ("processes", "processes-shipped"):
        run = tmp_path / executor
        res = cli.invoke(
            app, ["run", "-s", SCENARIO, "--agent", "oracle", "--agent", "noop", "--concurrency", "2",
                  "--executor", executor, "--run-dir", str(run)],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        runs[executor] = run
    for executor, run in runs.items():
        got = {(r["agent"], r["mitigation"]["passed"], r["error"]) for r in records(run)}
        assert got == {("oracle", True, None), ("noop", False, None)}, executor
        files = sorted(
            str(p.relative_to(run / "episodes")) for p in (run / "episodes").rglob("*") if p.is_file()
        )
        assert any(f.endswith("trajectory.jsonl") for f in files)
        runs[executor] = files  # type: ignore[assignment]
    assert runs["processes"] == runs["processes-shipped"]


def test_unknown_broken_and_misused_executors_are_refused(fresh: Path, tmp_path: Path) -> None:
    install(fresh)
    cli = CliRunner()
    base = ["run", "-s", SCENARIO, "--agent", "noop", "--run-dir", str(tmp_path / "run")]
    res = cli.invoke(app, [*base, "--executor", "nope"])
    assert res.exit_code == 2 and "unknown executor 'nope' (known: in-process, processes" in res.output
    res = cli.invoke(app, [*base, "--executor", "gone"])
    assert res.exit_code == 2 and "executor 'gone'" in res.output and "does not load" in res.output
    res = cli.invoke(app, [*base, "--executor", "hollow"])
    assert res.exit_code == 2 and "is not an Executor" in res.output
    res = cli.invoke(app, [*base, "--executor", "in-process", "--concurrency", "2"])
    assert res.exit_code == 2 and "one episode at a time" in res.output
    assert not (tmp_path / "run").exists()
