"""The CISO audit (issue 28): blind strategies must score 0 on the strict column on every scenario,
noop nothing, the oracle everything — on the whole library (scored directly), and through the
harness as agents for one scenario of each class (the same verdicts both ways)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from itbench_agents.agents.audit.ciso import STRATEGIES
from itbench_agents.agents.audit.ciso_rego import REGO_STRATEGIES, RHEL_ONLY
from itbench_agents.personas.ciso.audit import ALL_STRATEGIES, CisoAudit, audit_direct, run_ciso_audit
from itbench_agents.personas.ciso.library import ciso_library

RHEL_SAMPLE = {
    "ciso/rhel-opa-ssh-x11-forwarding-v1",
    "ciso/rhel-opa-ip-forwarding-v1",
    "ciso/rhel-opa-shadow-permissions-v1",
}
"""Each rhel-opa scenario costs four playbook runs here; the whole rhel-opa library is audited by
``itbench scenarios audit --suite ciso 'ciso/rhel-opa-*'`` (see the issue notes for its figures)."""
LIBRARY = [s for s in ciso_library() if s.task_class != "rhel-opa" or s.id in RHEL_SAMPLE]
PAIR = ["ciso/kyverno-host-path-v1", "ciso/kyverno-update-seccomp-v1", "ciso/k8s-opa-host-path-v1"]


@pytest.mark.slow
def test_no_blind_strategy_scores_strict_anywhere_in_the_library() -> None:
    res = audit_direct(LIBRARY)
    assert res.ok, res.problems()
    new = {s.id for s in LIBRARY if s.task_class == "kyverno"}
    update = {s.id for s in LIBRARY if s.task_class == "kyverno-update"}
    opa = {s.id for s in LIBRARY if s.task_class in ("k8s-opa", "rhel-opa")}
    assert opa > RHEL_SAMPLE
    for name, (_, everywhere) in STRATEGIES.items():
        assert set(res.tallies[name].applicable) == (new | update if everywhere else update), name
    rhel = {s.id for s in LIBRARY if s.task_class == "rhel-opa"}
    for name in REGO_STRATEGIES:
        assert set(res.tallies[name].applicable) == (rhel if name in RHEL_ONLY else opa), name
    # remediating instead of assessing: the evidence is compliant, so nothing is detected
    assert set(res.tallies["rhel-remediate"].detected) == set()
    # the paper's pass alone is fooled: a deny-everything policy "detects" every new-policy violation
    assert set(res.tallies["deny-everything"].detected) == new
    assert set(res.tallies["deny-all-edit"].detected) == update
    # and a policy that always says false "detects" every k8s-opa violation
    assert set(res.tallies["rego-always-false"].detected) == opa


@pytest.mark.slow  # ~45 episodes: the whole suite runs it; the fast tier keeps the direct checks
def test_through_the_harness_the_verdicts_are_the_same(tmp_path: Path) -> None:
    names = ["noop", "oracle", *ALL_STRATEGIES]
    episodes = run_ciso_audit(PAIR, names, tmp_path / "audit")
    assert episodes.ok, episodes.problems()
    direct = audit_direct([s for s in LIBRARY if s.id in PAIR])
    for name in ALL_STRATEGIES:
        if name not in direct.tallies:  # applies to none of PAIR (rhel-remediate: rhel-opa only)
            assert name not in episodes.tallies, name
            continue
        got, want = episodes.tallies[name], direct.tallies[name]
        assert (sorted(got.applicable), sorted(got.detected), sorted(got.strict)) == (
            sorted(want.applicable),
            sorted(want.detected),
            sorted(want.strict),
        ), name
    assert sorted(episodes.tallies["oracle"].strict) == sorted(PAIR)


def test_the_verdict_names_what_went_wrong() -> None:
    res = CisoAudit()
    res.add("oracle", "ciso/a-v1", detected=True, strict=False)
    res.add("noop", "ciso/a-v1", detected=True, strict=False)
    res.add("deny-everything", "ciso/a-v1", detected=True, strict=True)
    assert res.problems() == [
        "oracle misses the strict column on ciso/a-v1",
        "noop scores on ciso/a-v1",
        "blind strategy deny-everything scores strict on ciso/a-v1",
    ]


def test_cli_audits_the_ciso_suite() -> None:
    from itbench_agents.cli import app

    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "scenarios",
            "audit",
            "--suite",
            "ciso",
            "ciso/kyverno-host-ipc-v1",
            "--strategy",
            "deny-everything",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = {r["strategy"]: r for r in json.loads(res.stdout)["strategies"]}
    assert rows["deny-everything"]["detected (paper's pass)"] == 1 and rows["deny-everything"]["strict"] == 0
    bad = runner.invoke(app, ["scenarios", "audit", "--suite", "ciso", "--strategy", "nope"])
    assert bad.exit_code == 2 and "unknown CISO audit strategy nope" in bad.output
