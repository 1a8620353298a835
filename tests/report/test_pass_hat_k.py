"""pass^k beside pass@k (τ-bench's reliability): an agent whose passes are luck keeps a high pass@k
and a low pass^k; the report's figures — SRE's, and CISO's and FinOps' for their own passes — equal
a brute-force count over the trials' subsets."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from support.episode_records import episode
from support.run_folders import ciso_run, finops_run

from itbench_agents.harness.records import EpisodeRecord
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.report import load_runs
from itbench_agents.report.aggregate import summarize
from itbench_agents.report.build import pass_at_k_rows, write_reports
from itbench_agents.report.frames import pass_k

FAULTS = ["sre/ad-failure-flag-v1", "sre/ad-scaled-to-zero-v1", "sre/payment-failure-flag-v1"]
OUTCOMES = {
    # agent -> scenario -> diagnosis right on each of 4 trials (mitigation the same)
    "steady": {FAULTS[0]: [1, 1, 1, 1], FAULTS[1]: [1, 1, 1, 1], FAULTS[2]: [0, 0, 0, 0]},
    "lucky": {FAULTS[0]: [1, 1, 0, 1], FAULTS[1]: [0, 1, 1, 1], FAULTS[2]: [1, 0, 1, 0]},
}


def _brute(outcomes: list[int], k: int, need_all: bool) -> float:
    subsets = list(itertools.combinations(outcomes, k))
    test = all if need_all else any
    return sum(1 for s in subsets if test(s)) / len(subsets)


def test_pass_hat_k_tells_a_lucky_agent_from_a_steady_one() -> None:
    records = [
        episode(sid, agent, bool(ok), bool(ok), trial=t)
        for agent, by_scenario in OUTCOMES.items()
        for sid, trials in by_scenario.items()
        for t, ok in enumerate(trials)
    ]
    header, rows = pass_at_k_rows(summarize(records))
    assert header == [
        "agent",
        "condition",
        "estimator",
        *(f"diagnosis k={k} %" for k in range(1, 5)),
        *(f"mitigation k={k} %" for k in range(1, 5)),
    ]
    table = {(r[0], r[2]): r[3:] for r in rows}
    for agent, by_scenario in OUTCOMES.items():
        for estimator, need_all in (("pass@k", False), ("pass^k", True)):
            want = []
            for k in range(1, 5):
                per = [_brute(trials, k, need_all) for trials in by_scenario.values()]
                want.append(f"{100 * sum(per) / len(per):.1f}")
            assert table[(agent, estimator)] == want * 2, (agent, estimator)  # diagnosis, then mitigation
    # the two pass as often at k = 1, and by pass@4 the lucky one looks the better agent (100 % against
    # 66.7 %); pass^k says which of the two can be relied on
    assert table[("steady", "pass@k")][0] == table[("lucky", "pass@k")][0] == "66.7"
    lucky_at, lucky_hat = table[("lucky", "pass@k")], table[("lucky", "pass^k")]
    steady_at, steady_hat = table[("steady", "pass@k")], table[("steady", "pass^k")]
    assert float(lucky_at[3]) > float(steady_at[3])
    assert float(lucky_hat[1]) < float(steady_hat[1]) and float(lucky_hat[3]) == 0.0
    assert steady_hat[:4] == steady_at[:4]  # a deterministic agent: the two estimators agree


def test_one_trial_has_no_pass_k_table() -> None:
    records = [episode(sid, "steady", True, True, trial=0) for sid in FAULTS]
    assert pass_at_k_rows(summarize(records)) == ([], [])


def _want_rows(
    records: list[EpisodeRecord], passes: dict[str, Callable[[EpisodeRecord], bool]]
) -> list[list[str]]:
    """The table by brute force over the trials' subsets, from the records alone."""
    scored = [r for r in records if r.scored]
    cells: dict[tuple[str, str], list[EpisodeRecord]] = {}
    for r in scored:
        cells.setdefault((r.agent, r.scenario_id), []).append(r)
    kmax = min(len(v) for v in cells.values())
    rows = []
    for agent in sorted({a for a, _ in cells}):
        for estimator, need_all in (("pass@k", False), ("pass^k", True)):
            row = [agent, estimator]
            for passed in passes.values():
                for k in range(1, kmax + 1):
                    per = [
                        _brute([int(passed(r)) for r in rs], k, need_all)
                        for (a, _), rs in sorted(cells.items())
                        if a == agent
                    ]
                    row.append(f"{100 * sum(per) / len(per):.1f}")
            rows.append(row)
    return rows


def _md_rows(text: str, heading: str) -> list[list[str]]:
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|") and "---" not in line][1:]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


def test_ciso_and_finops_reports_show_pass_k_of_their_own_passes(tmp_path: Path) -> None:
    ciso_dir, fin_dir = ciso_run(tmp_path / "ciso"), finops_run(tmp_path / "fin")
    md, page = write_reports([ciso_dir, fin_dir])
    text = md.read_text()
    ciso = [r for r in read_episodes(ciso_dir)]
    fin = [r for r in read_episodes(fin_dir)]

    def scored_as(name: str) -> Callable[[EpisodeRecord], bool]:
        return lambda r: name in r.scores and r.scores[name].value >= 1.0

    want = _want_rows(ciso, {"detected": scored_as("detected"), "strict": scored_as("strict")})
    assert _md_rows(text, "## CISO: pass@k and pass^k") == want
    incidents = [r for r in fin if r.category != "anomaly"]
    want = _want_rows(
        incidents,
        {
            "diagnosis": lambda r: bool(r.diagnosis and r.diagnosis.correct),
            "mitigation": lambda r: bool(r.mitigation and r.mitigation.passed),
        },
    )
    assert _md_rows(text, "## FinOps cost incidents: pass@k and pass^k") == want
    anomalies = [r for r in fin if r.category == "anomaly"]
    want = _want_rows(anomalies, {"pinpointed": scored_as("pinpointed")})
    assert _md_rows(text, "## FinOps anomaly detection: pass@k and pass^k") == want
    # the trials differ, so pass^k is below pass@k somewhere: the table is not pass@k twice
    assert any(a != b for a, b in zip(want[0][2:], want[1][2:], strict=True))
    html_page = page.read_text()
    for title in ("CISO", "FinOps cost incidents", "FinOps anomaly detection"):
        assert f"<h2>{title}: pass@k and pass^k</h2>" in html_page


def _frame_rows(table: pd.DataFrame, metrics: list[str]) -> list[list[str]]:
    """:func:`pass_k` in the report table's layout (a row per agent and estimator)."""
    rows = []
    for agent in sorted(table["agent"].unique()):
        for estimator in ("pass@k", "pass^k"):
            row = [agent, estimator]
            for metric in metrics:
                sel = table[
                    (table["agent"] == agent) & (table["estimator"] == estimator) & (table["score"] == metric)
                ]
                row += [f"{v:.1f}" for v in sel.sort_values("k")["pct"]]
            rows.append(row)
    return rows


def test_the_dataframe_api_gives_the_reports_pass_k(tmp_path: Path) -> None:
    ciso_dir, fin_dir = ciso_run(tmp_path / "ciso"), finops_run(tmp_path / "fin")
    md, _ = write_reports([ciso_dir, fin_dir])
    text = md.read_text()
    frames = load_runs([ciso_dir, fin_dir])
    ep = frames.episodes
    ciso = pass_k(frames, ep[ep["persona"] == "ciso"], ["detected", "strict"])
    assert _frame_rows(ciso, ["detected", "strict"]) == _md_rows(text, "## CISO: pass@k and pass^k")
    fin = ep[ep["persona"] == "finops"]
    incidents = pass_k(frames, fin[fin["category"] != "anomaly"], ["diagnosis", "mitigation"])
    assert _frame_rows(incidents, ["diagnosis", "mitigation"]) == _md_rows(
        text, "## FinOps cost incidents: pass@k and pass^k"
    )
    anomalies = pass_k(frames, fin[fin["category"] == "anomaly"], ["pinpointed"])
    assert _frame_rows(anomalies, ["pinpointed"]) == _md_rows(
        text, "## FinOps anomaly detection: pass@k and pass^k"
    )
    # one trial: nothing to show, as the report shows nothing
    assert pass_k(frames, ep[ep["trial"] == 0], ["detected"]).empty
