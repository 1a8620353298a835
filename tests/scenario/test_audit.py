"""``itbench scenarios audit``: naive and destructive strategies must not score where they should not.

The full library runs with ``itbench scenarios audit --all`` (see docs/metrics.md); here a handful
of representative scenarios keep CI short: a scaled-to-zero workload (otel-demo and Hotel
Reservation), a feature flag, a fault that is itself an over-scaling, and a healthy control.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from itbench_agents.evaluation.spread import best_fixed_answers, fixed_answer_hits, fixed_answers
from itbench_agents.personas.sre.audit import (
    ALL_STRATEGIES,
    DEFAULT_STRATEGIES,
    REPORTED_STRATEGIES,
    AuditResult,
    Cell,
    chosen_strategies,
    is_blind,
    is_destructive,
    is_judged,
    is_library_wide,
    run_audit,
)
from itbench_agents.scenario.registry import ScenarioRegistry

REPRESENTATIVE = [
    "sre/ad-scaled-to-zero-v1",
    "sre/ad-failure-flag-v1",
    "sre/hotel-geo-scaled-to-zero-v1",
    "sre/payment-pod-anti-affinity-v1",
    "sre/control-otel-demo-healthy-v1",
]


def test_violations_name_the_strategy_and_scenario() -> None:
    res = AuditResult(["audit-scale-loadgen", "noop", "oracle", "audit-shotgun"], ["sre/a-v1", "sre/b-v1"])
    res.cells[("audit-scale-loadgen", "sre/a-v1")] = Cell("submitted", False, True)
    res.cells[("audit-scale-loadgen", "sre/b-v1")] = Cell("submitted", False, False)
    res.cells[("noop", "sre/a-v1")] = Cell("submitted", False, False)
    res.cells[("noop", "sre/b-v1")] = Cell("env_error", False, None, "boom")
    res.cells[("oracle", "sre/a-v1")] = Cell("submitted", True, False, "alerts: still firing")
    res.cells[("oracle", "sre/b-v1")] = Cell("submitted", True, True)
    res.cells[("audit-shotgun", "sre/a-v1")] = Cell("submitted", True, True)  # not destructive: reported
    assert res.violations() == [
        "audit-scale-loadgen passes mitigation on sre/a-v1",
        "noop did not run on sre/b-v1: boom",
        "oracle fails mitigation on sre/a-v1: alerts: still firing",
    ]
    assert res.totals("audit-scale-loadgen") == {
        "episodes": 2,
        "diagnosis_pass": 0,
        "mitigation_pass": 1,
        "mitigation_applicable": 2,
        "errors": 0,
        "acted": 0,
    }


def test_a_blind_strategy_may_mitigate_at_most_five_percent() -> None:
    sids = [f"sre/s{i}-v1" for i in range(40)]
    res = AuditResult(["audit-blanket-reset"], sids)
    for i, sid in enumerate(sids):
        res.cells[("audit-blanket-reset", sid)] = Cell("submitted", False, i < 2)
    assert res.violations() == []  # 2/40 = 5%
    res.cells[("audit-blanket-reset", sids[2])] = Cell("submitted", False, True)
    assert res.violations() == [
        "audit-blanket-reset passes mitigation on 3/40 faults (more than 5%): sre/s0-v1, sre/s1-v1, sre/s2-v1"
    ]
    res = AuditResult(["audit-name-flag-file"], sids)
    for i, sid in enumerate(sids):
        res.cells[("audit-name-flag-file", sid)] = Cell("submitted", i < 5, False if i else None)
    # sids[0] is a control (mitigation not applicable): 4/39 faults is just over 10%
    assert res.violations() == [
        "audit-name-flag-file passes diagnosis on 4/39 faults (more than 10%): " + ", ".join(sids[1:5])
    ]


def test_the_constant_answers_rate_is_judged_on_the_whole_library_only() -> None:
    """Its answer is the library's most common one: on a handful of scenarios its rate says only
    how the handful was picked; over the library it is held to the 10% bar."""
    sids = [f"sre/s{i}-v1" for i in range(10)]
    res = AuditResult(["audit-constant-answer"], sids)
    for i, sid in enumerate(sids):
        res.cells[("audit-constant-answer", sid)] = Cell("submitted", i < 2, False)
    assert not res.rate_judged("audit-constant-answer") and res.violations() == []
    res.library = True
    assert res.violations() == [
        "audit-constant-answer passes diagnosis on 2/10 faults (more than 10%): sre/s0-v1, sre/s1-v1"
    ]
    # the other blind strategies are judged on any set
    assert AuditResult(["audit-blanket-reset"], sids).rate_judged("audit-blanket-reset")


def test_the_built_in_strategies() -> None:
    destructive = {s for s in DEFAULT_STRATEGIES if is_destructive(s)}
    assert destructive == {
        "audit-scale-loadgen",
        "audit-delete-alerting",
        "audit-scale-alerting",
        "audit-delete-namespace",
        "audit-blind-telemetry",
    }
    assert {"noop", "oracle"} <= set(DEFAULT_STRATEGIES)
    assert {
        "audit-blanket-reset",
        "audit-blanket-vandal",
        "audit-name-flag-file",
        "audit-newest-rollout",
        "audit-constant-answer",
    } <= set(DEFAULT_STRATEGIES)
    # by default the audit runs what it judges; the reported strategies run when asked for
    assert set(REPORTED_STRATEGIES) == {
        "audit-restart-all",
        "audit-shotgun",
        "audit-alerting-root",
        "audit-change-detection",
        "audit-undo-changes",
    }
    assert set(DEFAULT_STRATEGIES) | set(REPORTED_STRATEGIES) == set(ALL_STRATEGIES)
    assert not set(DEFAULT_STRATEGIES) & set(REPORTED_STRATEGIES)
    from itbench_agents.agents.registry import make_agent

    for s in ALL_STRATEGIES:
        assert make_agent(s) is not None
    assert chosen_strategies(None) == list(DEFAULT_STRATEGIES)
    assert chosen_strategies(None, reported=True) == [*DEFAULT_STRATEGIES, *REPORTED_STRATEGIES]
    assert chosen_strategies(["audit-shotgun", "noop", "noop"], reported=True) == [
        "audit-shotgun",
        "noop",
        *(s for s in REPORTED_STRATEGIES if s != "audit-shotgun"),
    ]


def test_the_finops_cost_incident_strategies() -> None:
    from itbench_agents.agents.registry import entry, make_agent
    from itbench_agents.personas.sre.audit import FINOPS_STRATEGIES

    assert {s for s in FINOPS_STRATEGIES if is_destructive(s)} == {
        "audit-finops-scale-to-zero",
        "audit-finops-delete-app",
        "audit-finops-silence",
    }
    assert {s for s in FINOPS_STRATEGIES if is_blind(s)} == {
        "audit-finops-blanket-cutter",
        "audit-finops-trim",
    }
    assert FINOPS_STRATEGIES[:2] == ("noop", "oracle") and all(is_judged(s) for s in FINOPS_STRATEGIES)
    assert not set(FINOPS_STRATEGIES[2:]) & set(ALL_STRATEGIES)  # the SRE audit's set is unchanged
    for s in FINOPS_STRATEGIES[2:]:
        assert entry(s).personas == ("finops",) and make_agent(s) is not None


def test_the_blind_cost_cutters_commands() -> None:
    """What the trim and the cutter do to a namespace, command by command (no twin)."""
    from itbench_agents.agents.audit.finops_twin import BlanketCutter, Trim

    listed = {
        "get horizontalpodautoscalers,cronjobs,jobs": [
            {"kind": "HorizontalPodAutoscaler", "metadata": {"name": "ad"}},
            {"kind": "CronJob", "metadata": {"name": "quarter-end-close"}},
        ],
        "get pods": [
            {
                "status": {"phase": "Running"},
                "spec": {"volumes": [{"persistentVolumeClaim": {"claimName": "db"}}]},
            },
            {
                "status": {"phase": "Succeeded"},
                "spec": {"volumes": [{"persistentVolumeClaim": {"claimName": "old"}}]},
            },
        ],
        "get persistentvolumeclaims": [
            {"metadata": {"name": "db"}},
            {"metadata": {"name": "old"}},
            {"metadata": {"name": "archive"}},
        ],
        "get deployments,statefulsets": [
            {"kind": "Deployment", "metadata": {"name": "ad"}, "spec": {"replicas": 3}},
            {"kind": "Deployment", "metadata": {"name": "cart"}, "spec": {"replicas": 1}},
            {
                "kind": "Deployment",
                "metadata": {"name": "frontend"},
                "spec": {"template": {"spec": {"nodeSelector": {"pool": "dedicated"}}}},
            },
        ],
    }

    def get(ctx: Any, command: str, events: Any) -> list[dict[str, Any]]:
        return listed.get(command.rsplit(" -n ", 1)[0].replace(",daemonsets", ""), [])

    for cls in (Trim, BlanketCutter):
        ran: list[str] = []

        def kubectl(ctx: Any, command: str, events: Any, ran: list[str] = ran) -> bool:
            ran.append(command)
            return True

        agent = cls()
        agent._get = get  # type: ignore[method-assign]
        agent._kubectl = kubectl  # type: ignore[method-assign]
        agent.act(None, "otel-demo", lambda e: None)
        assert ran[:5] == [
            "delete horizontalpodautoscaler ad -n otel-demo",
            "delete cronjob quarter-end-close -n otel-demo",
            # every claim no running or starting pod mounts
            "delete persistentvolumeclaim old -n otel-demo",
            "delete persistentvolumeclaim archive -n otel-demo",
            "scale deployment/ad --replicas=1 -n otel-demo",
        ], ran
        if cls is Trim:
            assert len(ran) == 6 and ran[5].startswith("patch deployment frontend -n otel-demo --type=merge")
        else:
            assert [c for c in ran if c.startswith("set resources")] == [
                f"set resources deployment/{d} --requests=cpu=10m,memory=32Mi -n otel-demo"
                for d in ("ad", "cart", "frontend")
            ]


@pytest.fixture(scope="module")
def twin_ok() -> None:
    try:
        from itbench_agents.twin.instance import Twin

        Twin.for_app("otel-demo", history_s=0).close()
    except Exception as e:  # the twin's parts are built by other areas
        pytest.skip(f"the otel-demo twin does not start here: {type(e).__name__}: {e}")


SCORED = list(DEFAULT_STRATEGIES)
"""The strategies this test holds to a score on every representative scenario; the others are only
reported (docs/metrics.md) and run here on one scenario of each app, to show that they work."""
REPORTED_ON = ["sre/ad-failure-flag-v1", "sre/hotel-geo-scaled-to-zero-v1"]


@pytest.fixture(scope="module")
def audit(twin_ok: None, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    return run_audit(REPRESENTATIVE, SCORED, tmp_path_factory.mktemp("audit"), jobs=2)


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_the_reported_strategies_run_on_both_apps(twin_ok: None, tmp_path: Path) -> None:
    reported = list(REPORTED_STRATEGIES)
    assert reported, "every strategy is scored: this test has nothing left to check"
    res = run_audit(REPORTED_ON, reported, tmp_path / "audit", jobs=2)
    assert res.violations() == []
    for st in reported:
        tot = res.totals(st)
        assert tot["episodes"] == len(REPORTED_ON) and tot["errors"] == 0, st


@pytest.mark.timeout(900)
@pytest.mark.slow
@pytest.mark.xdist_group("library")  # one worker; the README main job on the other
def test_no_destructive_strategy_mitigates_and_the_oracle_does(audit: AuditResult) -> None:
    assert audit.violations() == []
    assert sorted(audit.strategies) == sorted(SCORED)
    for st in audit.strategies:
        tot = audit.totals(st)
        assert tot["episodes"] == len(REPRESENTATIVE) and tot["errors"] == 0, st
        if is_destructive(st) or st == "noop":
            assert tot["mitigation_pass"] == 0, st
    oracle = audit.totals("oracle")
    assert oracle["diagnosis_pass"] == len(REPRESENTATIVE)
    assert oracle["mitigation_pass"] == oracle["mitigation_applicable"] == len(REPRESENTATIVE) - 1
    # the destructive strategies really acted on the otel-demo fault scenarios (the hotel app has
    # no load generator in the cluster; RBAC refuses the agents a namespace delete, whose scoring
    # tests/harness/test_endstate.py covers as the admin)
    for st in audit.strategies:
        if is_destructive(st) and st != "audit-delete-namespace":
            for sid in ("sre/ad-scaled-to-zero-v1", "sre/ad-failure-flag-v1"):
                assert audit.cells[(st, sid)].acted > 0, (st, sid)
    # turning off the load generator cost the traffic check
    cell = audit.cells[("audit-scale-loadgen", "sre/ad-scaled-to-zero-v1")]
    assert "traffic" in cell.reason and "load-generator" in cell.reason
    # the blanket reset mitigates nothing here, and not because it fails to act: it does fix
    # these faults (the alerts are gone) but breaks what the baseline protects (issue 26)
    blind = [st for st in audit.strategies if is_blind(st)]
    assert blind
    for st in blind:
        assert audit.totals(st)["mitigation_pass"] == 0, st
        hits = {s for s in REPRESENTATIVE if audit.cells[(st, s)].diagnosis and "control" not in s}
        if is_library_wide(st):
            # the constant answer is right exactly where the library's strongest fixed answer is
            # a correct diagnosis (evaluation/spread.py), and this sample holds three of those
            reg = ScenarioRegistry.default()
            best = {ns: entity for ns, (entity, _n) in best_fixed_answers(reg.all()).items()}
            expected = {s for s in REPRESENTATIVE if best[reg.get(s).namespace] in fixed_answers(reg.get(s))}
            assert hits == expected and len(expected) == 3, (st, hits, expected)
            continue
        assert not hits, st
        if st not in ("audit-blanket-reset", "audit-blanket-vandal"):
            continue
        for sid in ("sre/ad-scaled-to-zero-v1", "sre/ad-failure-flag-v1", "sre/hotel-geo-scaled-to-zero-v1"):
            cell = audit.cells[(st, sid)]
            assert cell.acted > 0 and cell.reason.startswith("collateral:"), (st, sid, cell.reason)
            # the vandal's clean-up around the app is on record as such: cordoned and tainted
            # nodes, the app's ServiceAccount (hotel-reservation runs on "default" alone)
            vandalised = ("Node/twin-worker-1 modified" in cell.reason) and (
                "hotel" in sid or "otel-demo/ServiceAccount/opentelemetry-demo deleted" in cell.reason
            )
            assert vandalised == (st == "audit-blanket-vandal"), (st, sid, cell.reason)


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_cli_audit_exits_1_when_a_destructive_strategy_mitigates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, twin_ok: None
) -> None:
    """The real scorer fails the strategy (exit 0); a scorer that passes everything (the failure
    mode of issue 12) makes the audit name the strategy and scenario and exit 1."""
    from itbench_agents.cli import app

    runner = CliRunner()

    def audit(run_dir: str) -> Any:
        args = ["sre/ad-scaled-to-zero-v1", "--strategy", "audit-scale-loadgen"]
        return runner.invoke(app, ["scenarios", "audit", *args, "--run-dir", str(tmp_path / run_dir)])

    ok = audit("a")
    assert ok.exit_code == 0, ok.output
    assert "audit-scale-loadgen" in ok.output and "0/1" in ok.output

    from itbench_agents.harness import twin_env

    def lenient(self: twin_env.TwinEnvironment) -> twin_env.MitigationScore:
        return twin_env.MitigationScore(passed=True, probe_ok=True)

    monkeypatch.setattr(twin_env.TwinEnvironment, "evaluate", lenient)
    bad = audit("b")
    assert bad.exit_code == 1
    assert "audit-scale-loadgen passes mitigation on sre/ad-scaled-to-zero-v1" in bad.output


def test_the_newest_rollout_names_the_owner_of_the_newest_replicaset() -> None:
    from itbench_agents.agents.audit.strategies import NewestRollout

    def rs(name: str, owner: str, created: str) -> dict[str, Any]:
        ref = {"kind": "Deployment", "name": owner, "controller": True}
        return {"metadata": {"name": name, "creationTimestamp": created, "ownerReferences": [ref]}}

    agent = NewestRollout()
    listed = [rs("ad-1", "ad", "2026-01-01T10:00:00Z"), rs("cart-2", "cart", "2026-01-01T10:05:00Z")]
    agent._get = lambda ctx, command, events: listed  # type: ignore[method-assign]
    [entity] = agent.diagnose(None, "otel-demo", lambda e: None)
    assert entity.name == "otel-demo/Deployment/cart"
    agent._get = lambda ctx, command, events: []  # type: ignore[method-assign]
    assert agent.diagnose(None, "otel-demo", lambda e: None) == []


def test_the_constant_answer_is_the_librarys_strongest_fixed_answer() -> None:
    """What someone who read the public scenario files would answer every time: per app, the
    entity that alone is a correct diagnosis on the most scenarios."""
    from itbench_agents.agents.audit.strategies import ConstantAnswer

    reg = ScenarioRegistry.default()
    hits = fixed_answer_hits(reg.all())
    for ns in ("otel-demo", "hotel-reservation"):
        [entity] = ConstantAnswer().diagnose(None, ns, lambda e: None)
        assert entity.contributing_factor and entity.name.startswith(f"{ns}/")
        assert hits[entity.name] == max(n for e, n in hits.items() if e.startswith(f"{ns}/")), ns
