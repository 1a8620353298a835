"""``itbench kyverno test DIR`` as a user meets it: a passing case, a failing one, and bad input
(no folder, an unreadable test file) that must never read as a pass."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from itbench_agents.cli import app

POLICY = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  rules:
  - name: team-label
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: a team label is required
      pattern: {metadata: {labels: {team: "?*"}}}
"""
RESOURCES = """apiVersion: v1
kind: Pod
metadata: {name: good, labels: {team: a}}
spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec: {containers: [{name: c, image: nginx}]}
"""


def write_case(root: Path, good_expected: str = "pass") -> None:
    case = root / "require-team"
    case.mkdir(parents=True)
    (case / "policy.yaml").write_text(POLICY)
    (case / "resources.yaml").write_text(RESOURCES)
    (case / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\n"
        "policies: [policy.yaml]\nresources: [resources.yaml]\nresults:\n"
        f"- {{policy: require-team, rule: team-label, resources: [good], result: {good_expected}}}\n"
        "- {policy: require-team, rule: team-label, resources: [bad], result: fail}\n"
    )


def test_a_case_that_holds_and_one_that_does_not(tmp_path: Path) -> None:
    write_case(tmp_path / "ok")
    res = CliRunner().invoke(app, ["kyverno", "test", str(tmp_path / "ok")], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "outcomes: 2/2 as expected" in res.output
    write_case(tmp_path / "wrong", good_expected="fail")
    res = CliRunner().invoke(app, ["kyverno", "test", str(tmp_path / "wrong"), "-f"], env={"COLUMNS": "200"})
    assert res.exit_code == 1
    assert "want fail, got pass" in res.output


def test_bad_input_never_reads_as_a_pass(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["kyverno", "test", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "not a folder" in res.output
    res = CliRunner().invoke(app, ["kyverno", "test", str(tmp_path)])
    assert res.exit_code == 2 and "no kyverno-test.yaml" in res.output
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "kyverno-test.yaml").write_text("results: [\n")
    res = CliRunner().invoke(app, ["kyverno", "test", str(tmp_path)], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "unreadable test" in res.output
