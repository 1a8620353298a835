"""The README's main job, as a newcomer runs it: its command from a fresh copy of the repository,
with the default runs folder, must print the README's results table figures — the same as the same
run with an absolute ``--run-dir``."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DONE = re.compile(
    r"done: (\d+) ran, \d+ already done; diagnosis (\d+)/(\d+), mitigation (\d+)/(\d+), errors (\d+)"
)


def readme_main_command() -> list[str]:
    """The first ``uv run itbench run ...`` line of the README, as argv after ``itbench``."""
    text = (REPO / "README.md").read_text()
    for line in text.splitlines():
        if line.startswith("uv run itbench run "):
            return shlex.split(line.split("#", 1)[0])[3:]
    raise AssertionError("the README has no `uv run itbench run` command")


def readme_table() -> tuple[int, int, int, int]:
    """(diagnosis passed, scenarios, mitigation passed, fault scenarios) of the sre-heuristic row."""
    row = next(
        line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| sre-heuristic")
    )
    d = re.search(r"(\d+)/(\d+) = [\d.]+%", row)
    cells = row.split("|")
    m = re.search(r"(\d+)/(\d+)", cells[4])
    assert d and m, row
    return int(d[1]), int(d[2]), int(m[1]), int(m[2])


def fresh_copy(dst: Path) -> Path:
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)
    return dst


def summary_of(out: str) -> tuple[int, ...]:
    m = DONE.search(out)
    assert m, out[-2000:]
    return tuple(int(x) for x in m.groups())


def outcomes(run_dir: Path) -> dict[str, tuple[bool, bool | None]]:
    """scenario id -> (diagnosis correct, mitigation passed) of the run's harness records."""
    from itbench_agents.harness.runfolder import read_episodes

    return {
        r.scenario_id: (
            bool(r.diagnosis and r.diagnosis.correct),
            None if r.mitigation is None else r.mitigation.passed,
        )
        for r in read_episodes(run_dir)
    }


SAMPLE = 6
"""Scenarios the absolute ``--run-dir`` run repeats: both ways of naming the run folder must give
the same outcome, and a sample of mixed outcomes shows it without a second run of the whole suite."""


@pytest.mark.timeout(1800)  # the whole SRE suite plus a sample of it, on 2 cores
@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs a git checkout to copy")
@pytest.mark.slow
def test_readme_main_command_as_written_reproduces_the_table(tmp_path: Path) -> None:
    argv = readme_main_command()
    assert "--run-dir" not in argv
    itbench = [sys.executable, "-m", "itbench_agents.cli"]  # what `uv run itbench` starts
    # a newcomer's environment: without the suite's twin self-checks (tests/conftest.py), which
    # recompute every kept verdict (about a fifth of the run's time) and change no outcome
    env = {k: v for k, v in os.environ.items() if k != "ITBENCH_TWIN_VERIFY_VERDICTS"}
    copy = fresh_copy(tmp_path / "clone")
    as_written = subprocess.run(
        [*itbench, *argv, "--no-report"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert as_written.returncode == 0, as_written.stderr[-3000:]
    runs = list((copy / "runs").iterdir())
    assert len(runs) == 1, "the default runs folder is ./runs"
    ran, diag, n, mit, n_fault, errors = summary_of(as_written.stderr)
    assert errors == 0
    assert (diag, n, mit, n_fault) == readme_table(), (
        "the README's results table is not what the command prints"
    )

    relative = outcomes(runs[0])
    assert len(relative) == ran
    # a sample with every kind of outcome the suite has, then the rest in id order
    by_kind: dict[tuple[bool, bool | None], list[str]] = {}
    for sid in sorted(relative):
        by_kind.setdefault(relative[sid], []).append(sid)
    sample = [ids[0] for ids in by_kind.values()]
    sample += [sid for sid in sorted(relative) if sid not in sample][: max(0, SAMPLE - len(sample))]
    i = argv.index("--suite")
    rest = argv[:i] + argv[i + 2 :]  # the same command, on the sample instead of the suite
    scenario_args = [x for sid in sample for x in ("--scenario", sid)]
    absolute = subprocess.run(
        [*itbench, *rest, *scenario_args, "--no-report", "--run-dir", str(tmp_path / "abs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert absolute.returncode == 0, absolute.stderr[-3000:]
    assert summary_of(absolute.stderr)[0] == len(sample)
    assert outcomes(tmp_path / "abs") == {sid: relative[sid] for sid in sample}  # --run-dir is the run folder
