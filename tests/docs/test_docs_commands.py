"""Every ``itbench`` command line in the project's Markdown (README, docs/, examples/, the package
READMEs) is accepted by the real CLI: the command exists and every option and value parses (issue 27:
the docs once showed ``--record``/``--replay``, which did not exist). Parsing only; the blocks that
are cheap and self-contained also run (below, and in the tests each block names)."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^([ \t]*)```(\w*)\n(.*?)^\1```", re.M | re.S)


def markdown_files() -> list[Path]:
    skip = {".venv", "node_modules", ".git", "runs"}
    return sorted(p for p in REPO.rglob("*.md") if not skip & set(p.relative_to(REPO).parts))


def command_lines(text: str) -> list[str]:
    """The ``itbench`` invocations of the shell blocks (and indented examples) of a Markdown text:
    continuation lines joined, comments, ``&`` and ``uv run`` dropped, one per command of a line."""
    blocks = [body for _, lang, body in FENCE.findall(text) if lang in ("", "bash", "sh", "shell", "console")]
    blocks += [m.group(0) for m in re.finditer(r"(?m)^(?: {4}.*\n)+", text)]  # indented code
    out = []
    for block in blocks:
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = line.strip()
            for part in re.split(r"\s(?:&&|;|\|)\s", line):
                part = part.strip()
                part = re.sub(r"^uv run ", "", part)
                part = re.sub(r"\s&$", "", part)
                if re.match(r"^itbench\s", part):
                    out.append(part)
    return out


def cases() -> list[tuple[str, str]]:
    found = []
    for md in markdown_files():
        for line in command_lines(md.read_text()):
            found.append((str(md.relative_to(REPO)), line))
    return found


def click_exceptions_of(cmd: object) -> Any:
    """The exceptions of the click behind typer's commands (typer ships its own copy of click)."""
    base = next(c for c in type(cmd).__mro__ if c.__name__ == "Command")
    return importlib.import_module(base.__module__.rpartition(".")[0] + ".exceptions")


def parse(argv: list[str]) -> Any:
    """Resolve ``argv`` down to its leaf command and parse its options, as ``itbench`` would,
    without running anything; raises the CLI's ``UsageError`` for what it would refuse."""
    from itbench_agents.cli import app

    cmd: Any = typer.main.get_command(app)
    ctx = cmd.make_context("itbench", list(argv), resilient_parsing=False)
    while hasattr(cmd, "resolve_command"):  # a group: find the subcommand, parse its arguments
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]
        name, sub, rest = cmd.resolve_command(ctx, args)
        cmd, ctx = sub, sub.make_context(name or "", rest, parent=ctx, resilient_parsing=False)
    return ctx


def usage_error() -> type[Exception]:
    from itbench_agents.cli import app

    error: type[Exception] = click_exceptions_of(typer.main.get_command(app)).UsageError
    return error


def test_the_docs_have_commands_to_check() -> None:
    found = cases()
    files = {f for f, _ in found}
    assert {"README.md", "docs/extending.md", "examples/plugin/README.md"} <= files, files
    assert len(found) >= 30, len(found)


@pytest.mark.parametrize(("doc", "line"), cases())
def test_every_documented_command_parses(
    doc: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # the docs' relative paths (examples/..., scenarios/...) are the checkout's
    argv = shlex.split(line.replace("$PWD", str(REPO)), comments=True)[1:]
    argv = [a.replace("<run_id>", "run") for a in argv if a != "&"]
    try:
        parse(argv)
    except usage_error() as exc:
        pytest.fail(f"{doc}: `{line}` does not parse: {exc.format_message()}")  # type: ignore[attr-defined]


def test_a_wrong_flag_would_be_caught() -> None:
    with pytest.raises(usage_error(), match="No such option: --record"):
        parse(["run", "-s", "sre/ad-scaled-to-zero-v1", "--agent", "sre-react", "--record", "x"])
    with pytest.raises(usage_error(), match="No such command 'lst'"):
        parse(["agents", "lst"])
    with pytest.raises(usage_error(), match="valid integer"):
        parse(["run", "--suite", "sre", "--trials", "three"])


@pytest.mark.slow  # a whole itbench run (11 s)
def test_the_own_scenario_folder_example_runs(tmp_path: Path) -> None:
    """docs/extending.md §4, the block as written (in a scratch folder, against this checkout)."""
    text = (REPO / "docs/extending.md").read_text()
    (block,) = [b for _, lang, b in FENCE.findall(text) if lang == "bash" and "my-ad-outage" in b]
    script = block.replace("scenarios/sre/", f"{REPO}/scenarios/sre/")
    script = re.sub(r"(?m)^itbench ", f"{sys.executable} -m itbench_agents.cli ", script)
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert "1/1 scenarios valid" in out and "diagnosis 1/1, mitigation 1/1" in out, out[-2000:]
