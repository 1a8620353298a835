"""``itbench_agents.report.load_runs``: run folders as DataFrames (runs, episodes, scores), read
through the same signed records ``itbench report`` reads."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from support.episode_records import episode
from support.run_folders import ciso_run, finops_run, mixed_sre_run

from itbench_agents.harness.batch import start_run
from itbench_agents.harness.records import AgentSpec, RunConfig, Timing
from itbench_agents.harness.runfolder import EpisodeLog, RunFolderError
from itbench_agents.report import RunFrames, load_runs
from itbench_agents.report.frames import EPISODE_COLUMNS, SCORE_COLUMNS
from itbench_agents.scenario.registry import ScenarioRegistry

SRE = "sre/ad-failure-flag-v1"
CONTROL = "sre/control-otel-demo-healthy-v1"
FINOPS = "finops/ad-idle-replicas-v1"


def make_run(d: Path, run_id: str) -> Path:
    cfg = RunConfig(
        scenarios=[SRE, CONTROL, FINOPS],
        agents=[AgentSpec(name="noop"), AgentSpec(name="sre-react", model="openai/gpt-4o", label="react")],
    )
    start_run(d, cfg, ScenarioRegistry.default(), run_id=run_id)
    log = EpisodeLog(d)
    solved = episode(SRE, "react", True, True)
    solved.timing = Timing(mttd_twin_s=120.0, mttr_twin_s=600.0, agent_wall_s=3.0)
    for rec in (
        solved,
        episode(SRE, "noop", False, False),  # never mitigated: MTTR stays the record's ∞
        episode(CONTROL, "react", True, None),  # a no-fault control: nothing to mitigate
        episode(FINOPS, "react", True, True, scores={"proximity_cpu_cost": 0.9, "proximity_ram_cost": 0.8}),
        episode(FINOPS, "noop", False, False, termination="harness_error"),
    ):
        rec.run_id = run_id
        rec.persona = rec.scenario_id.split("/")[0]  # type: ignore[assignment]
        log.append(rec)
    log.close()
    with (d / "episodes.jsonl").open("a") as fh:  # a line the harness did not sign
        fh.write(episode(SRE, "intruder", True, True).model_dump_json() + "\n")
    return d


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory) -> RunFrames:
    base = tmp_path_factory.mktemp("frames")
    return load_runs([make_run(base / "a", "run-a"), make_run(base / "b", "run-b")])


def test_one_row_per_episode_with_every_documented_column(frames: RunFrames) -> None:
    ep = frames.episodes
    assert tuple(ep.columns) == EPISODE_COLUMNS
    assert len(ep) == 10 and "intruder" not in set(ep["agent"])  # the unsigned line is left out
    assert set(ep["run_id"]) == {"run-a", "run-b"}
    react = ep[(ep["agent"] == "react") & (ep["run_id"] == "run-a")]
    assert set(react["agent_name"]) == {"sre-react"} and set(react["model"]) == {"openai/gpt-4o"}
    noop = ep[ep["agent"] == "noop"]
    assert set(noop["agent_name"]) == {"noop"} and noop["model"].isna().all()


def test_outcomes_are_booleans_with_na_where_there_is_nothing_to_score(frames: RunFrames) -> None:
    ep = frames.episodes.set_index(["run_id", "scenario_id", "agent"])
    assert str(ep["mitigation_passed"].dtype) == "boolean"
    assert ep.loc[("run-a", SRE, "react"), "mitigation_passed"] == True  # noqa: E712 (numpy bool)
    assert ep.loc[("run-a", SRE, "noop"), "mitigation_passed"] == False  # noqa: E712
    assert pd.isna(ep.loc[("run-a", CONTROL, "react"), "mitigation_passed"])
    assert not ep.loc[("run-a", FINOPS, "noop"), "scored"]
    assert ep.loc[("run-a", FINOPS, "noop"), "termination"] == "harness_error"
    # the records' ∞ (never happened) is NaN, so that means and percentiles stay finite
    assert ep.loc[("run-a", SRE, "react"), "mttr_twin_s"] == 600.0
    assert math.isnan(ep.loc[("run-a", SRE, "noop"), "mttr_twin_s"])
    assert ep.groupby("agent")["mitigation_passed"].mean().to_dict() == {"noop": 0.0, "react": 1.0}


def test_scores_are_long_so_one_pivot_covers_every_persona(frames: RunFrames) -> None:
    sc = frames.scores
    assert tuple(sc.columns) == SCORE_COLUMNS
    table = sc[sc["run_id"] == "run-a"].pivot_table(
        index="score", columns="agent", values="value", aggfunc="mean"
    )
    assert table.loc["proximity_cpu_cost", "react"] == pytest.approx(0.9)
    assert table.loc["mitigation", "react"] == 1.0  # the control has no mitigation row
    assert table.loc["diagnosis", "noop"] == 0.0
    assert len(sc[(sc["run_id"] == "run-a") & (sc["scenario_id"] == CONTROL)]) == 1  # diagnosis only


def test_runs_table_and_errors(frames: RunFrames, tmp_path: Path) -> None:
    runs = frames.runs.set_index("run_id")
    assert runs.loc["run-a", "episodes"] == 5 and runs.loc["run-a", "episodes_planned"] == 6
    assert str(runs["created_at"].dtype).startswith("datetime64")
    one = load_runs(runs.loc["run-b", "run_dir"])  # one path, not a list
    assert len(one.episodes) == 5
    with pytest.raises(RunFolderError, match="not a run folder"):
        load_runs([tmp_path])


@pytest.mark.parametrize("faults_only", [True, False])
def test_table4_is_the_reports_table4(tmp_path: Path, faults_only: bool) -> None:
    from itbench_agents.report.aggregate import summarize
    from itbench_agents.report.build import load_records
    from itbench_agents.report.frames import table4

    d = mixed_sre_run(tmp_path / "mixed")
    ours = table4(load_runs(d).episodes, faults_only=faults_only)
    summary = summarize(load_records([d]))
    theirs = summary.faults_only if faults_only else summary.overall
    assert len(ours) == len(theirs) == 3  # noop, oracle, oracle without traces
    for g in theirs:
        row = ours.loc[(g.agent, g.group)]
        assert (row["scenarios"], row["episodes"], row["bad_runs"]) == (g.scenarios, g.episodes, g.bad_runs)
        pairs = [
            ("diagnosis_pass1_pct", g.diagnosis, 100),
            ("ntam_fl", g.ntam_fl, 1),
            ("ntam_fpc", g.ntam_fpc, 1),
            ("mttd_s", g.mttd_wall, 1),
            ("mitigation_pass1_pct", g.mitigation, 100),
            ("mttr_s", g.mttr_wall, 1),
        ]
        for col, stat, scale in pairs:
            want = (math.nan, math.nan) if stat is None else (scale * stat.mean, scale * stat.stderr)
            got = (row[col], row[col + "_se"])
            for w, v in zip(want, got, strict=True):
                assert (math.isnan(w) and math.isnan(v)) or v == pytest.approx(w), (
                    g.agent,
                    g.group,
                    col,
                    want,
                    got,
                )


def _parse(cell: str) -> tuple[float, float]:
    mean, _, se = cell.partition(" ± ")
    return float(mean), (math.nan if se in ("", "n/a") else float(se))


def _close(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all((math.isnan(x) and math.isnan(y)) or abs(x - y) <= 0.006 for x, y in zip(a, b, strict=True))


def test_table6_and_the_anomaly_table_are_the_reports(tmp_path: Path) -> None:
    from itbench_agents.report.build import load_records
    from itbench_agents.report.finops import table6_rows, twin_rows
    from itbench_agents.report.frames import ANOMALY_SCORES, PROXIMITY, anomaly_table, table6

    d = finops_run(tmp_path / "fin")
    frames, records = load_runs(d), load_records([d])
    ours = table6(frames)
    for row in twin_rows(records):
        mine = ours.loc[row[0]]
        cols = [("diagnosis_pct", "_se"), ("mitigation_pct", "_se"), *((k, "_std") for k in PROXIMITY)]
        for cell, (col, suffix) in zip(row[1:7], cols, strict=True):
            assert _close(_parse(cell), (mine[col], mine[col + suffix])), (row[0], col, cell)
        assert (int(mine["episodes"]), int(mine["bad_runs"])) == (int(row[7]), int(row[8]))
    anomalies = anomaly_table(frames)
    for row in table6_rows(records):
        mine = anomalies.loc[row[0]]
        scale = [100, 100, 1, 1, 1, 1]
        cols = [*ANOMALY_SCORES, "time_s"]
        for cell, col, k in zip(row[1:7], cols, scale, strict=True):
            assert _close(_parse(cell), (k * mine[col], k * mine[col + "_se"])), (row[0], col, cell)
        assert (int(mine["episodes"]), int(mine["bad_runs"])) == (int(row[7]), int(row[8]))
    assert len(ours) == len(anomalies) == 2


PROXIMITY = (
    "proximity_cpu_cost",
    "proximity_ram_cost",
    "proximity_cpu_efficiency",
    "proximity_ram_efficiency",
)
ANOMALY_SCORES_ = ("pinpointed", "root_cause_resource", "precision", "recall", "f1")


def test_table5_is_the_reports(tmp_path: Path) -> None:
    from itbench_agents.report.build import load_records
    from itbench_agents.report.ciso import table5_rows
    from itbench_agents.report.frames import CISO_CLASSES, CISO_SCORES, table5

    d = ciso_run(tmp_path / "ciso")
    ours, rows = table5(load_runs(d)), table5_rows(load_records([d]))
    assert len(ours) == len(rows) == 2
    for row in rows:
        mine = ours.loc[row[0]]
        cols = [*(f"{c}_pct" for c in CISO_CLASSES), *(f"{k}_pct" for k in CISO_SCORES), "ttp_s"]
        for cell, col in zip(row[1:11], cols, strict=True):
            if cell == "—":  # no scenario of that class
                assert math.isnan(mine[col]), (row[0], col)
                continue
            assert _close(_parse(cell), (mine[col], mine[col + "_se"])), (row[0], col, cell)
        assert (int(mine["episodes"]), int(mine["bad_runs"])) == (int(row[11]), int(row[12]))
