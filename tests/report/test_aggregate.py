"""Aggregation: per-scenario mean ± stderr, macro average, buckets, conditions, ∞ times."""

from __future__ import annotations

import math

import pytest

from itbench_agents.evaluation.diagnosis import DiagnosisScore
from itbench_agents.harness.records import EpisodeRecord, MitigationScore, Timing
from itbench_agents.report.aggregate import summarize


def rec(
    sid: str,
    trial: int,
    diag: bool,
    mit: bool | None,
    *,
    agent: str = "a",
    masked: list[str] | None = None,
    bucket: str = "easy",
    termination: str = "submitted",
    mttd: float = 10.0,
) -> EpisodeRecord:
    t = Timing(agent_wall_s=mttd, agent_twin_s=mttd)
    if diag:
        t.mttd_wall_s = mttd
    if mit:
        t.mttr_wall_s = mttd * 2
    return EpisodeRecord(
        episode_id=f"{sid}-{trial}",
        run_id="r",
        scenario_id=sid,
        agent=agent,
        trial=trial,
        seed=trial,
        masked=masked or [],
        termination=termination,  # type: ignore[arg-type]
        started_at="",
        finished_at="",
        wall_s=1.0,
        diagnosis=None
        if termination == "env_error"
        else DiagnosisScore(correct=diag, ntam_fl=1.0 if diag else 0.2),
        mitigation=None if mit is None else MitigationScore(applicable=True, passed=mit),
        timing=t,
        bucket=bucket,
        category="Other",
    )


def test_macro_average_and_stderr() -> None:
    recs = [
        rec("s1", 0, True, True),
        rec("s1", 1, False, False),
        rec("s2", 0, True, True),
        rec("s2", 1, True, True),
    ]
    s = summarize(recs)
    per = {r.scenario_id: r for r in s.scenarios}
    assert per["s1"].diagnosis.mean == 0.5 and per["s1"].diagnosis.stderr == pytest.approx(0.5)
    assert per["s1"].pass_at_k == {1: 0.5, 2: 1.0}
    o = s.overall[0]
    assert o.diagnosis.mean == pytest.approx(0.75) and o.diagnosis.stderr == pytest.approx(0.25)
    assert o.mitigation is not None and o.mitigation.mean == pytest.approx(0.75)
    assert o.mttd_wall.mean == pytest.approx(10.0) and o.mttd_wall.n == 3
    assert o.mttr_wall.mean == pytest.approx(20.0)


def test_times_are_infinite_without_success_and_bad_runs_are_excluded() -> None:
    recs = [rec("s1", 0, False, False), rec("s1", 1, False, False, termination="env_error")]
    o = summarize(recs).overall[0]
    assert math.isinf(o.mttd_wall.mean) and math.isinf(o.mttr_wall.mean)
    assert o.episodes == 1 and o.bad_runs == 1


def test_breakdowns_by_bucket_and_condition() -> None:
    recs = [
        rec("s1", 0, True, True, bucket="easy"),
        rec("s2", 0, False, False, bucket="hard"),
        rec("s1", 0, False, False, masked=["traces"], bucket="easy"),
    ]
    s = summarize(recs)
    assert {(g.group, g.diagnosis.mean) for g in s.by_bucket} == {("easy", 0.5), ("hard", 0.0)}
    assert {(g.group, g.diagnosis.mean) for g in s.by_condition} == {("traces on", 0.5), ("traces off", 0.0)}
    # the headline rows keep the conditions apart (issue 27: a merged run pooled them)
    from itbench_agents.report.tables import table4_row

    assert [(g.group, g.episodes) for g in s.overall] == [("traces on", 2), ("traces off", 1)]
    agent = s.overall[0].agent
    assert [table4_row(g)[0] for g in s.overall] == [agent, f"{agent} (traces off)"]


def test_timing_infinity_roundtrips_through_json() -> None:
    r = rec("s1", 0, False, False)
    back = EpisodeRecord.model_validate_json(r.model_dump_json())
    assert math.isinf(back.timing.mttd_wall_s) and back.timing.agent_wall_s == 10.0


def test_faults_only_rows_leave_the_controls_out() -> None:
    """A no-fault control counts in the headline diagnosis rate (naming nothing is right there) but
    the paper's Table 4 has faults only: the faults-only rows give that denominator."""
    control = rec("control", 0, True, None).model_copy(update={"control": True})
    recs = [rec("f1", 0, True, True), rec("f2", 0, False, False), control]
    s = summarize(recs)
    assert s.overall[0].diagnosis.mean == pytest.approx(2 / 3) and s.overall[0].scenarios == 3
    (faults,) = s.faults_only
    assert faults.scenarios == 2 and faults.diagnosis.mean == pytest.approx(0.5)
    assert faults.mitigation is not None and faults.mitigation.mean == pytest.approx(0.5)
    assert summarize(recs[:2]).faults_only == []  # no control: nothing to add


def test_the_report_shows_the_faults_only_table() -> None:
    from itbench_agents.report.build import FAULTS_ONLY, render_markdown

    control = rec("control", 0, True, None).model_copy(update={"control": True})
    recs = [rec("f1", 0, True, True), rec("f2", 0, False, False), control]
    md = render_markdown(summarize(recs), ["run"], recs)
    assert f"### {FAULTS_ONLY}" in md
    assert "### Faults only" not in render_markdown(summarize(recs[:2]), ["run"], recs[:2])


def test_the_strict_pass_beside_the_pass() -> None:
    """A diagnosis that names a consequence it showed on the fault's chain passes, but not
    ITBench-Lite's strict pass; a record written before ``exact`` was kept (``correct`` then was the
    strict pass, and nothing was forgiven) counts as it did."""
    from itbench_agents.report.tables import TABLE4_HEADER, table4_row

    recs = [rec("s1", 0, True, True), rec("s2", 0, True, True), rec("s3", 0, False, False)]
    assert recs[0].diagnosis is not None and recs[1].diagnosis is not None
    recs[0].diagnosis.on_chain = ["ns/Deployment/starved"]  # forgiven: correct, not exact
    recs[1].diagnosis.exact = False  # an old record: correct was strict
    (g,) = summarize(recs).overall
    assert g.diagnosis.mean == pytest.approx(2 / 3)
    assert g.diagnosis_strict is not None and g.diagnosis_strict.mean == pytest.approx(1 / 3)
    row = dict(zip(TABLE4_HEADER, table4_row(g), strict=True))
    assert row["diagnosis pass@1 %"].startswith("66.67") and row[
        "strict diagnosis % (ITBench-Lite)"
    ].startswith("33.33")
