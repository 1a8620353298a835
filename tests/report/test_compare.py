"""``itbench compare``: two runs (or two agents) paired by scenario, with a sign test (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.episode_records import episode
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.report.compare import CompareError, compare, sign_test


def test_the_sign_test_is_the_exact_binomial() -> None:
    assert sign_test(7, 0) == pytest.approx(2 / 2**7)
    assert sign_test(5, 1) == pytest.approx(2 * (1 + 6) / 2**6)
    assert sign_test(3, 3) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(1, 5) == sign_test(5, 1)


def test_scenarios_are_paired_trials_averaged_and_unpaired_ones_listed() -> None:
    a = [
        episode("s1", "base", False, False),
        episode("s2", "base", True, True),
        episode("s3", "base", False, None),  # a control: no mitigation
        episode("only-a", "base", True, True),
    ]
    b = [
        episode("s1", "new", True, True, trial=0),
        episode("s1", "new", False, True, trial=1),  # diagnosis 0.5 on s1
        episode("s2", "new", True, True),
        episode("s3", "new", True, None),
        episode("s2", "new", False, False, trial=2, termination="env_error"),  # unscored: left out
        episode("only-b", "new", True, True),
    ]
    c = compare(a, b)
    assert (c.label_a, c.label_b) == ("base", "new")
    assert c.only_a == ["only-a"] and c.only_b == ["only-b"]
    by = {m.metric: m for m in c.metrics}
    d = by["diagnosis"]
    assert d.scenarios == 3 and d.mean_a == pytest.approx(1 / 3) and d.mean_b == pytest.approx(2.5 / 3)
    assert (d.b_better, d.a_better, d.ties) == (2, 0, 1)
    assert d.differing == [("s1", 0.0, 0.5), ("s3", 0.0, 1.0)]
    m = by["mitigation"]
    assert m.scenarios == 2 and (m.b_better, m.ties) == (1, 1)  # the control has no mitigation


def test_with_trials_pass_hat_k_tells_a_steady_agent_from_a_lucky_one() -> None:
    steady = {"s1": [1, 1, 1, 1], "s2": [0, 0, 0, 0]}
    lucky = {"s1": [1, 0, 1, 0], "s2": [0, 1, 0, 1]}  # the same mean on each scenario pair overall
    a = [
        episode(sid, "steady", bool(ok), None, trial=t)
        for sid, xs in steady.items()
        for t, ok in enumerate(xs)
    ]
    b = [
        episode(sid, "lucky", bool(ok), None, trial=t) for sid, xs in lucky.items() for t, ok in enumerate(xs)
    ]
    b.append(episode("s1", "lucky", True, None, trial=9, termination="harness_error"))  # unscored: left out
    by = {m.metric: m for m in compare(a, b).metrics}
    assert by["diagnosis"].mean_a == by["diagnosis"].mean_b == 0.5
    hat = by["diagnosis pass^4"]  # k: the fewest trials of a pair
    assert (hat.mean_a, hat.mean_b) == (0.5, 0.0)
    assert hat.differing == [("s1", 1.0, 0.0)] and (hat.b_better, hat.a_better, hat.ties) == (0, 1, 1)
    # one trial on either side: no pass^k; a metric that is not pass/fail: none either
    one = [episode("s1", "once", True, None), episode("s2", "once", False, None)]
    assert not any("pass^" in m.metric for m in compare(a, one).metrics)
    graded = [episode("s1", "g", True, None, trial=t, scores={"proximity": 0.5}) for t in range(2)]
    assert "proximity pass^2" not in {m.metric for m in compare(graded, graded).metrics}
    assert "diagnosis pass^2" in {m.metric for m in compare(graded, graded).metrics}


def test_named_scores_are_compared_and_agents_must_be_named_when_several() -> None:
    run = [
        episode("x", "oracle", False, None, scores={"pinpointed": 1.0}),
        episode("x", "noop", False, None, scores={"pinpointed": 0.0}),
    ]
    with pytest.raises(CompareError, match="2 agents \\(noop, oracle\\).*--agent-a"):
        compare(run, run)
    with pytest.raises(CompareError, match="no agent 'gpt'"):
        compare(run, run, "gpt", "oracle")
    c = compare(run, run, "noop", "oracle")
    assert {m.metric: m.difference for m in c.metrics}["pinpointed"] == 1.0
    with pytest.raises(CompareError, match="no scenario"):
        compare(run, [episode("y", "oracle", True, True)], "noop")


def test_cli_compares_two_agents_of_a_real_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        ["run", "--suite", "finops", "-s", "finops/anomaly-spike*", "-a", "oracle", "-a", "noop"]
        + ["--run-dir", str(run), "--no-report"],
    )
    assert res.exit_code == 0, res.output
    out = CliRunner().invoke(
        app, ["compare", str(run), str(run), "--agent-a", "noop", "--agent-b", "oracle", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    pin = next(m for m in data["metrics"] if m["metric"] == "pinpointed")
    assert pin["mean_a"] == 0.0 and pin["mean_b"] == 1.0 and pin["b_better"] == pin["scenarios"] >= 5
    assert pin["p_value"] < 0.07
    table = CliRunner().invoke(
        app, ["compare", str(run), str(run), "--agent-a", "noop", "--agent-b", "oracle"]
    )
    assert table.exit_code == 0 and "pinpointed" in table.output and "+1.000" in table.output
    bad = CliRunner().invoke(app, ["compare", str(run), str(run)])
    assert bad.exit_code == 2 and "error: run A has 2 agents" in bad.output and "--agent-a" in bad.output
