"""The ``opa`` command agents get on their PATH: ITBench's ``opa eval`` line on the twin's OPA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from itbench_agents.agents.command import CommandAgent
from itbench_agents.core.endpoints import Endpoints
from itbench_agents.core.task import Limits, Task
from itbench_agents.twin.addons.opa import opa_command
from itbench_agents.twin.serve import running_twin

POLICY = """package check
import rego.v1

default result := false

result if {
  input.sshd.permitrootlogin == "no"
}
"""


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    with running_twin(workdir=tmp_path_factory.mktemp("twin"), addons=["opa"]) as twin:
        assert twin.endpoints is not None
        yield twin.endpoints


def opa(
    endpoints: Endpoints, cwd: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The command as an agent runs it: a bare interpreter (-I -S: no site-packages), stdlib only."""
    env = {"PATH": "/usr/bin:/bin", "OPA_URL": str(endpoints.opa_url), "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-I", "-S", opa_command.__file__, *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, input=stdin,
    )  # fmt: skip


def test_itbench_eval_line_decides_on_collected_data(endpoints: Endpoints, tmp_path: Path) -> None:
    (tmp_path / "policy.rego").write_text(POLICY)
    line = [
        "eval",
        "--data",
        "policy.rego",
        "--input",
        "collected_data.json",
        "data.check.result",
        "--format",
        "raw",
    ]
    (tmp_path / "collected_data.json").write_text(json.dumps({"sshd": {"permitrootlogin": "yes"}}))
    r = opa(endpoints, tmp_path, *line)
    assert (r.returncode, r.stdout) == (0, "false\n"), r.stderr
    (tmp_path / "collected_data.json").write_text(json.dumps({"sshd": {"permitrootlogin": "no"}}))
    assert opa(endpoints, tmp_path, *line).stdout == "true\n"
    js = json.loads(opa(endpoints, tmp_path, *line[:-2]).stdout)
    assert js["result"][0]["expressions"][0] == {
        "value": True, "text": "data.check.result", "location": {"row": 1, "col": 1}
    }  # fmt: skip


def test_data_files_folders_and_stdin_input(endpoints: Endpoints, tmp_path: Path) -> None:
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.rego").write_text("package p\nimport rego.v1\nok if input.n >= data.limits.min\n")
    (tmp_path / "pol" / "limits").mkdir()
    (tmp_path / "pol" / "limits" / "data.json").write_text('{"min": 14}')
    r = opa(endpoints, tmp_path, "eval", "-d", "pol", "-I", "data.p.ok", "-f", "raw", stdin='{"n": 15}')
    assert r.stdout == "true\n", r.stderr
    undefined = opa(endpoints, tmp_path, "eval", "-d", "pol", "-I", "data.p.ok", "--fail", stdin='{"n": 1}')
    assert undefined.returncode == 1 and json.loads(undefined.stdout) == {}


def test_errors_carry_opa_codes_and_positions(endpoints: Endpoints, tmp_path: Path) -> None:
    (tmp_path / "policy.rego").write_text("package check\nimport rego.v1\nresult if {\n  input.a == \n}\n")
    (tmp_path / "in.json").write_text("{}")
    r = opa(
        endpoints, tmp_path, "eval", "-d", "policy.rego", "-i", "in.json", "data.check.result", "-f", "raw"
    )
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("1 error occurred: policy.rego:5: rego_parse_error: ")
    chk = opa(endpoints, tmp_path, "check", "policy.rego", "--format", "json")
    assert chk.returncode == 1
    assert json.loads(chk.stdout)["errors"][0]["location"] == {"file": "policy.rego", "row": 5, "col": 1}
    (tmp_path / "good.rego").write_text(POLICY)
    assert opa(endpoints, tmp_path, "check", "good.rego").returncode == 0
    missing = opa(endpoints, tmp_path, "eval", "-d", "nope.rego", "data.check.result")
    assert missing.returncode == 1 and "nope.rego: no such file or directory" in missing.stderr
    fmt = opa(endpoints, tmp_path, "fmt", "good.rego")
    assert fmt.returncode == 1 and "no formatter" in fmt.stderr


def test_without_an_opa_server_the_command_says_so(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-I", "-S", opa_command.__file__, "eval", "data.x"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 1 and "OPA_URL is not set" in r.stderr


def test_a_command_agent_finds_opa_on_its_path(endpoints: Endpoints, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    task = Task(
        goal="g",
        endpoints=endpoints,
        workdir=str(work),
        limits=Limits(wall_time_s=60),
        namespaces=["default"],
    )
    script = (
        "printf '%s' 'package check\nimport rego.v1\nresult := count(input.items) == 0\n' > policy.rego; "
        "echo '{\"items\": [1]}' > collected_data.json; "
        "opa eval --data policy.rego --input collected_data.json data.check.result --format raw > decision.txt; "
        "command -v opa > where.txt"
    )
    out = CommandAgent(["sh", "-c", script], sandbox="auto").run(task, lambda e: None)
    assert out.extra["exit_code"] == 0
    assert (work / "decision.txt").read_text() == "false\n", (work / "agent_stderr.log").read_text()
    where = (work / "where.txt").read_text().strip()
    assert where.endswith("/opa") and not where.startswith(str(work))
    assert not os.path.exists(where)  # the harness's copy is gone with the episode


def test_v0_policies_need_the_v0_flag_as_in_opa_1(endpoints: Endpoints, tmp_path: Path) -> None:
    (tmp_path / "old.rego").write_text("package check\nresult { input.a == 1 }\n")
    line = ["eval", "-d", "old.rego", "-I", "data.check.result", "-f", "raw"]
    refused = opa(endpoints, tmp_path, *line, stdin='{"a": 1}')
    assert refused.returncode == 1 and "`if` keyword is required before rule body" in refused.stderr
    accepted = opa(endpoints, tmp_path, *line, "--v0-compatible", stdin='{"a": 1}')
    assert (accepted.returncode, accepted.stdout) == (0, "true\n"), accepted.stderr


def test_the_timeout_flag_bounds_an_evaluation(endpoints: Endpoints, tmp_path: Path) -> None:
    (tmp_path / "slow.rego").write_text(
        "package check\nimport rego.v1\nresult := count([x | some x in numbers.range(1, 1000000000)])\n"
    )
    r = opa(
        endpoints, tmp_path, "eval", "-d", "slow.rego", "data.check.result", "--timeout", "500ms", "-f", "raw"
    )
    assert r.returncode == 1 and "eval_cancel_error" in r.stderr and "0.5 s" in r.stderr, r.stderr
