"""FinOps cost anomaly detection (issue 16): seeded bills in ITBench-Lite's layout, the scorer, the
validation and audit of the library, and episodes through the harness (`itbench run --suite finops`).

Every blind way to an answer is a strategy that must not pass: no answer, a malformed answer,
naming the account, naming everything in the bill, naming the biggest spender, a constant answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, EpisodeRecord, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.personas.finops.anomaly_score import score_answer
from itbench_agents.personas.finops.anomaly_spec import AnomalyScenario
from itbench_agents.personas.finops.audit import audit_anomalies
from itbench_agents.personas.finops.billing import COLUMNS, generate
from itbench_agents.personas.finops.library import FinopsLibraryError, finops_library, load_anomaly
from itbench_agents.personas.finops.snapshot import SnapshotError, load_snapshot, write_snapshot
from itbench_agents.personas.finops.validate import library_problems, validate_anomaly
from itbench_agents.report.build import write_reports

TRUTH = [{"name": "checkout", "type": "Application"}]


@pytest.fixture(scope="module")
def library() -> list[AnomalyScenario]:
    return finops_library()


def test_the_library_has_fifteen_or_more_valid_scenarios_with_distinct_answers(
    library: list[AnomalyScenario],
) -> None:
    assert len(library) >= 15
    kinds = {s.anomaly.kind for s in library}
    assert kinds == {"spike", "level_shift", "new_resource", "price_change", "drift"}
    assert {b.kind for s in library for b in s.benign} >= {"month_end_batch", "planned_migration"}
    bad = {s.id: validate_anomaly(s).problems for s in library if not validate_anomaly(s).ok}
    assert not bad
    assert library_problems(library) == []


def test_bills_are_deterministic_and_in_itbench_lites_layout(
    library: list[AnomalyScenario], tmp_path: Path
) -> None:
    sc = library[0]
    a, b = generate(sc), generate(sc)
    assert a.csv_text() == b.csv_text() and a.truth == b.truth
    assert a.csv_text().splitlines()[0] == ",".join(COLUMNS)
    write_snapshot(a, tmp_path / "Scenario-1")
    snap = load_snapshot(tmp_path / "Scenario-1")
    assert snap.alert == a.alert and len(snap.data) == len(a.rows)
    assert set(json.loads((tmp_path / "Scenario-1" / "anomaly.json").read_text())) == {"date", "account_id"}
    row = snap.data.iloc[0]
    assert row["unblended_cost"] == pytest.approx(row["Price ($/hr)"] * row["Num_Instances"] * 24, abs=0.01)
    assert len(str(row["Account ID"])) == 12
    other = generate(sc.model_copy(update={"seed": sc.seed + 1}))
    assert other.csv_text() != a.csv_text()


def test_snapshot_errors_name_file_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="anomaly.json: missing"):
        load_snapshot(tmp_path)
    (tmp_path / "anomaly.json").write_text('{"date": "2025-03-01", "account_id": "123456789012"}')
    (tmp_path / "data.csv").write_text("date,Account ID\n2025-03-01,1\n")
    with pytest.raises(SnapshotError, match="missing column"):
        load_snapshot(tmp_path)
    header = ",".join(COLUMNS)
    (tmp_path / "data.csv").write_text(
        f"{header}\n2025-03-01,1,AWS,EC2,web,m5,0.19,3,13.68\n2025-03-02,1,AWS,EC2,web,m5,lots,3,1\n"
    )
    with pytest.raises(SnapshotError, match=r"line 3: column 'Price \(\$/hr\)': 'lots' is not a number"):
        load_snapshot(tmp_path)
    (tmp_path / "anomaly.json").write_text('{"date": "March"}')
    with pytest.raises(SnapshotError, match="expected"):
        load_snapshot(tmp_path)


@pytest.mark.parametrize(
    ("answer", "pinpointed", "root", "f1"),
    [
        ({"resource": TRUTH}, 1.0, 1.0, 1.0),
        ({"resource": [{"name": "checkout", "type": "application"}]}, 1.0, 1.0, 1.0),  # type aliases
        ({"resource": [{"name": " checkout ", "type": "App"}]}, 1.0, 1.0, 1.0),
        ({"resource": [*TRUTH, {"name": "m5", "type": "Instance_Family"}]}, 1.0, 1.0, 2 / 3),
        (
            {"resource": [*TRUTH, *({"name": f"x{i}", "type": "Application"} for i in range(3))]},
            0.0,
            1.0,
            0.4,
        ),
        ({"resource": [{"name": "checkout", "type": "Instance_Family"}]}, 0.0, 0.0, 0.0),  # wrong type
        ({"resource": []}, 0.0, 0.0, 0.0),
        ({"resources": TRUTH}, 0.0, 0.0, 0.0),
        ("not json", 0.0, 0.0, 0.0),
        ({"resource": [{"name": 3, "type": "Application"}]}, 0.0, 0.0, 0.0),
    ],
)
def test_scoring(answer: object, pinpointed: float, root: float, f1: float) -> None:
    s = score_answer(answer, TRUTH)
    assert (s.pinpointed, s.root_cause_resource) == (pinpointed, root)
    assert s.f1 == pytest.approx(f1)


def test_blind_strategies_do_not_pass_and_the_oracle_does(library: list[AnomalyScenario]) -> None:
    results = {r.name: r for r in audit_anomalies(library)}
    assert results["shotgun"].pinpointed == [] and results["shotgun"].root_cause == len(
        library
    )  # ITBench-Lite's metric is fooled
    assert results["account"].pinpointed == []
    assert results["biggest-spender"].rate <= 0.10
    assert results["constant"].rate <= 0.10
    assert all(r.ok for r in results.values())
    assert 0.5 < results["finops-heuristic"].rate < 1.0  # a baseline that finds most, not all


def test_library_errors_name_file_and_field(tmp_path: Path) -> None:
    f = tmp_path / "broken-v1.yaml"
    f.write_text(
        "id: finops/broken-v1\nname: b\ndescription: d\nanomaly: {kind: spike, level: Application, day: 3, magnitude: -1}\n"
    )
    with pytest.raises(FinopsLibraryError) as e:
        load_anomaly(f)
    assert f"{f}: anomaly.day: Input should be greater than or equal to 30" in str(e.value)
    assert f"{f}: anomaly.magnitude" in str(e.value)
    g = tmp_path / "other-v1.yaml"
    g.write_text(
        "id: finops/misnamed-v1\nname: b\ndescription: d\nanomaly: {kind: spike, level: Application, day: 40, magnitude: 2}\n"
    )
    with pytest.raises(FinopsLibraryError, match="must be finops/other-v1"):
        load_anomaly(g)


def _run(tmp_path: Path, agents: list[str], scenarios: list[str]) -> list[EpisodeRecord]:
    cfg = RunConfig(scenarios=scenarios, agents=[AgentSpec(name=a) for a in agents])
    run_dir = tmp_path / "run"
    _, specs, _ = start_run(run_dir, cfg, Catalogue.default())
    run_batch(run_dir, specs)
    return read_episodes(run_dir)


def test_episodes_through_the_harness(tmp_path: Path, library: list[AnomalyScenario]) -> None:
    ids = [library[0].id, library[5].id]
    recs = _run(tmp_path, ["oracle", "noop", "finops-heuristic", "audit-finops-shotgun"], ids)
    by = {(r.agent, r.scenario_id): r for r in recs}
    for sid in ids:
        oracle, noop, shot = by[("oracle", sid)], by[("noop", sid)], by[("audit-finops-shotgun", sid)]
        assert (
            oracle.persona == "finops" and oracle.category == "anomaly" and oracle.termination == "submitted"
        )
        assert {k: v.value for k, v in oracle.scores.items()} == dict.fromkeys(
            ("pinpointed", "root_cause_resource", "precision", "recall", "f1"), 1.0
        )
        assert (
            noop.scores["pinpointed"].value == 0.0
            and "no answer.json" in noop.scores["pinpointed"].explanation
        )
        assert shot.scores["pinpointed"].value == 0.0 and shot.scores["root_cause_resource"].value == 1.0
        assert oracle.diagnosis is None and oracle.mitigation is None
    # the agent's folder holds the data and the alert, never the answer key
    work = next((tmp_path / "run" / "episodes").glob("*noop*")) / "work"
    assert {p.name for p in work.iterdir()} == {
        "anomaly.json",
        "data.csv",
        "endpoints.json",
        "agent_output.json",
    }
    md, _ = write_reports([tmp_path / "run"])
    text = md.read_text()
    assert "## FinOps anomaly detection" in text and "## SRE results" not in text
    assert "## FinOps results (Table 6 layout)" not in text  # no cost incident in this run
    assert "| oracle | 100.00 ± 0.00 | 100.00 ± 0.00 |" in text


def test_suite_selection_and_cli(tmp_path: Path, library: list[AnomalyScenario]) -> None:
    cat = Catalogue.default()
    assert {s.id for s in cat.select(suite="finops:anomaly")} == {s.id for s in library}
    assert {s.id for s in library} < {s.id for s in cat.select(suite="finops")}  # and the twin's
    assert [s.id for s in cat.select(ids=["anomaly-price-change-v1"])] == ["finops/anomaly-price-change-v1"]
    assert cat.get("anomaly-price-change-v1").id == "finops/anomaly-price-change-v1"
    runner = CliRunner()
    r = runner.invoke(app, ["scenarios", "validate", "--suite", "finops", "anomaly-spike-*"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["scenarios", "list", "--suite", "finops", "--json"])
    rows = json.loads(r.output)
    assert sum(x["class"] == "anomaly" for x in rows) == len(library)
    assert sum(x["class"] == "twin" for x in rows) >= 4  # the cost incidents on the twin
    r = runner.invoke(app, ["scenarios", "show", "finops/anomaly-price-change-v1"])
    assert r.exit_code == 0 and "price_change" in r.output
    # the anomaly audit alone (without ids, the cost incidents on the twin follow: minutes)
    r = runner.invoke(app, ["scenarios", "audit", "--suite", "finops", "anomaly-*", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["twin"] is None and {x["strategy"] for x in doc["anomaly"]} >= {"shotgun", "constant"}
