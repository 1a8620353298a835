"""Run folders as pandas DataFrames: the way into results for notebooks and ad-hoc analysis.

    from itbench_agents.report import load_runs

    frames = load_runs(["runs/baseline", "runs/new-prompt"])
    frames.episodes.groupby("agent")["mitigation_passed"].mean()

:func:`load_runs` reads only what ``itbench run`` wrote (``run.json`` and the harness's signed
records in ``episodes.jsonl``; a foreign or torn line is left out as ``itbench report`` leaves it
out) and returns three tables:

``runs``
    One row per run folder: ``run_id``, ``run_dir``, ``created_at``, ``git_revision``, ``trials``,
    ``base_seed``, ``churn``, ``episodes_planned``, ``episodes`` (records read).
``episodes``
    One row per episode: identity (``run_id``, ``episode_id``, ``scenario_id``, ``persona``,
    ``agent`` — the display label —, ``agent_name``, ``model``, ``trial``, ``seed``, ``masked``),
    the scenario's ``category``, ``complexity``, ``bucket``, ``control``; the outcome
    (``termination``, ``error``, ``scored``, ``diagnosis_correct``, ``diagnosis_exact`` (ITBench-Lite's
    strict pass: nothing named besides the root causes), ``mitigation_passed`` — booleans,
    ``<NA>`` where the persona has none —, the diagnosis metrics ``diagnosis_precision``,
    ``diagnosis_recall``, ``diagnosis_f1``, ``ntam_fl``, ``ntam_fpc``, ``chain_f1``); time
    (``wall_s``, ``agent_wall_s``, ``harness_overhead_s``, ``preparation_shared_by``,
    ``mttd_twin_s``, ``mttr_twin_s``, ``mttd_wall_s``, ``mttr_wall_s``,
    ``alerts_fired_twin_s`` — NaN where it never happened, the
    records' ∞ —, ``started_at``, ``finished_at`` as UTC timestamps); cost (``steps``,
    ``input_tokens``, ``output_tokens``, ``cost_usd``, ``model_calls``, ``tool_calls``).
``scores``
    One row per episode and named score, long form: ``run_id``, ``episode_id``, ``scenario_id``,
    ``persona``, ``agent``, ``trial``, ``score``, ``value``. Every persona's named scores (CISO's
    ``detected``..., FinOps' proximity metrics, anomaly F1...), and for SRE-style episodes
    ``diagnosis`` and ``mitigation`` as 0/1, so that one ``pivot_table`` covers every persona.

:func:`load_runs` aggregates nothing. The paper's tables are computed from these frames by
:func:`table4` (SRE), :func:`table5` (CISO), :func:`table6` and :func:`anomaly_table` (FinOps),
and pass@k and pass^k by :func:`pass_k`, exactly as ``itbench report`` computes them from the
records (tests hold the two equal); the notebooks (``notebooks/``) use these and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..evaluation.stats import finite_mean, finite_stderr, stderr
from ..harness.records import EpisodeRecord
from ..harness.runfolder import read_episodes, read_manifest

EPISODE_COLUMNS = (
    "run_id",
    "episode_id",
    "scenario_id",
    "persona",
    "agent",
    "agent_name",
    "model",
    "trial",
    "seed",
    "masked",
    "category",
    "complexity",
    "bucket",
    "control",
    "termination",
    "error",
    "scored",
    "diagnosis_correct",
    "diagnosis_exact",
    "mitigation_passed",
    "diagnosis_precision",
    "diagnosis_recall",
    "diagnosis_f1",
    "ntam_fl",
    "ntam_fpc",
    "chain_f1",
    "wall_s",
    "agent_wall_s",
    "harness_overhead_s",
    "preparation_shared_by",
    "mttd_twin_s",
    "mttr_twin_s",
    "mttd_wall_s",
    "mttr_wall_s",
    "alerts_fired_twin_s",
    "started_at",
    "finished_at",
    "steps",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "model_calls",
    "tool_calls",
)
SCORE_COLUMNS = ("run_id", "episode_id", "scenario_id", "persona", "agent", "trial", "score", "value")
RUN_COLUMNS = (
    "run_id",
    "run_dir",
    "created_at",
    "git_revision",
    "trials",
    "base_seed",
    "churn",
    "episodes_planned",
    "episodes",
)


@dataclass(frozen=True)
class RunFrames:
    """The tables of one or more run folders (module docstring: their columns)."""

    runs: pd.DataFrame
    episodes: pd.DataFrame
    scores: pd.DataFrame


def _finite(x: float | None) -> float:
    return float("nan") if x is None or math.isinf(x) else float(x)


def episode_row(r: EpisodeRecord, agents: dict[str, tuple[str, str | None]]) -> dict[str, Any]:
    """One episode as a row of :attr:`RunFrames.episodes`; ``agents`` maps a display label to the
    agent's registry name and model, from the run's manifest."""
    name, model = agents.get(r.agent, (r.agent, None))
    d, m, t, u = r.diagnosis, r.mitigation, r.timing, r.usage
    return {
        "run_id": r.run_id,
        "episode_id": r.episode_id,
        "scenario_id": r.scenario_id,
        "persona": r.persona,
        "agent": r.agent,
        "agent_name": name,
        "model": model,
        "trial": r.trial,
        "seed": r.seed,
        "masked": ",".join(r.masked),
        "category": r.category,
        "complexity": r.complexity,
        "bucket": r.bucket,
        "control": r.control,
        "termination": r.termination,
        "error": r.error,
        "scored": r.scored,
        "diagnosis_correct": None if d is None else d.correct,
        "diagnosis_exact": None if d is None else d.strict(),
        "mitigation_passed": None if m is None or not m.applicable else m.passed,
        "diagnosis_precision": None if d is None else d.precision,
        "diagnosis_recall": None if d is None else d.recall,
        "diagnosis_f1": None if d is None else d.f1,
        "ntam_fl": None if d is None else d.ntam_fl,
        "ntam_fpc": None if d is None else d.ntam_fpc,
        "chain_f1": None if d is None else d.chain_f1,
        "wall_s": r.wall_s,
        "agent_wall_s": t.agent_wall_s,
        "harness_overhead_s": t.harness_overhead_s,
        "preparation_shared_by": t.preparation_shared_by,
        "mttd_twin_s": _finite(t.mttd_twin_s),
        "mttr_twin_s": _finite(t.mttr_twin_s),
        "mttd_wall_s": _finite(t.mttd_wall_s),
        "mttr_wall_s": _finite(t.mttr_wall_s),
        "alerts_fired_twin_s": _finite(t.alerts_fired_twin_s),
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "steps": r.steps,
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cost_usd": u.cost_usd,
        "model_calls": u.model_calls,
        "tool_calls": u.tool_calls,
    }


def score_rows(r: EpisodeRecord) -> list[dict[str, Any]]:
    """An episode's named scores as rows of :attr:`RunFrames.scores`."""
    base = {
        "run_id": r.run_id,
        "episode_id": r.episode_id,
        "scenario_id": r.scenario_id,
        "persona": r.persona,
        "agent": r.agent,
        "trial": r.trial,
    }
    named: dict[str, float] = {}
    if r.diagnosis is not None:
        named["diagnosis"] = float(r.diagnosis.correct)
    if r.mitigation is not None and r.mitigation.applicable:
        named["mitigation"] = float(r.mitigation.passed)
    named.update({k: float(s.value) for k, s in r.scores.items()})
    return [{**base, "score": k, "value": v} for k, v in named.items()]


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


def load_runs(paths: Sequence[str | Path] | str | Path) -> RunFrames:
    """The :class:`RunFrames` of the run folders ``paths`` (one path or several); a folder that is
    not a run folder raises ``RunFolderError`` naming it."""
    if isinstance(paths, str | Path):
        paths = [paths]
    runs: list[dict[str, Any]] = []
    episodes: list[dict[str, Any]] = []
    scores: list[dict[str, Any]] = []
    for p in paths:
        manifest = read_manifest(p)
        records = read_episodes(p)
        agents = {a.display: (a.name, a.model) for a in manifest.config.agents}
        cfg = manifest.config
        runs.append(
            {
                "run_id": manifest.run_id,
                "run_dir": str(Path(p)),
                "created_at": manifest.created_at,
                "git_revision": manifest.git_revision,
                "trials": cfg.trials,
                "base_seed": cfg.base_seed,
                "churn": cfg.churn,
                "episodes_planned": manifest.episodes_planned,
                "episodes": len(records),
            }
        )
        for r in records:
            episodes.append(episode_row(r, agents))
            scores.extend(score_rows(r))
    ep = _frame(episodes, EPISODE_COLUMNS)
    for col in ("diagnosis_correct", "diagnosis_exact", "mitigation_passed"):
        ep[col] = ep[col].astype("boolean")
    for col in ("started_at", "finished_at"):
        ep[col] = pd.to_datetime(ep[col], utc=True)
    rn = _frame(runs, RUN_COLUMNS)
    rn["created_at"] = pd.to_datetime(rn["created_at"], utc=True)
    return RunFrames(runs=rn, episodes=ep, scores=_frame(scores, SCORE_COLUMNS))


TABLE4_METRICS = ("diagnosis_pass1_pct", "ntam_fl", "ntam_fpc", "mttd_s", "mitigation_pass1_pct", "mttr_s")
"""Table 4's columns (the paper's order), each with a ``_se`` standard error beside it in :func:`table4`."""


def _se(xs: pd.Series) -> float:
    """Standard error of the mean (``evaluation.stats.stderr``: ddof 1, NaN under two values)."""
    return stderr(xs.dropna().tolist())


def _times(xs: pd.Series) -> tuple[float, float]:
    """Mean and standard error over the episodes where it happened (the frames' NaN is the records'
    ∞, never); ∞ when it never did (``evaluation.stats.finite_mean``)."""
    vals = xs.tolist()
    return finite_mean(vals), finite_stderr(vals)


def table4(episodes: pd.DataFrame, *, faults_only: bool = True) -> pd.DataFrame:
    """The paper's Table 4 from :attr:`RunFrames.episodes`, computed as ``itbench report`` computes
    it: SRE episodes that ran (harness errors and the like are ``bad_runs``); per agent and traces
    condition, diagnosis and mitigation pass@1 (%) and NTAM the macro average over scenarios of each
    scenario's mean over trials (a missing diagnosis counts 0; no-fault controls never enter
    mitigation, and with ``faults_only`` not at all: the paper's denominator); MTTD and MTTR (wall
    seconds) the mean over the episodes where they happened, ∞ where none did."""
    ep = episodes[episodes["persona"] == "sre"].copy()
    if faults_only:
        ep = ep[~ep["control"].astype(bool)]
    ep["condition"] = ep["masked"].map(
        lambda m: "traces off" if "traces" in str(m).split(",") else "traces on"
    )
    rows = []
    for (agent, cond), g in ep.groupby(["agent", "condition"], sort=True):
        ran = g[g["scored"].astype(bool)]
        diag = ran.assign(
            d=ran["diagnosis_correct"].fillna(False).astype(float),
            fl=ran["ntam_fl"].astype(float).fillna(0.0),
            fpc=ran["ntam_fpc"].astype(float).fillna(0.0),
        )
        per = diag.groupby("scenario_id")[["d", "fl", "fpc"]].mean()
        mit = ran[ran["mitigation_passed"].notna()]
        per_mit = mit.assign(m=mit["mitigation_passed"].astype(float)).groupby("scenario_id")["m"].mean()
        timed = ran[~ran["control"].astype(bool)]
        mttd, mttd_se = _times(timed["mttd_wall_s"])
        mttr, mttr_se = _times(timed["mttr_wall_s"])
        rows.append(
            {
                "agent": agent,
                "condition": cond,
                "scenarios": int(g["scenario_id"].nunique()),
                "episodes": len(ran),
                "bad_runs": len(g) - len(ran),
                "diagnosis_pass1_pct": 100 * per["d"].mean(),
                "diagnosis_pass1_pct_se": 100 * _se(per["d"]),
                "ntam_fl": per["fl"].mean(),
                "ntam_fl_se": _se(per["fl"]),
                "ntam_fpc": per["fpc"].mean(),
                "ntam_fpc_se": _se(per["fpc"]),
                "mttd_s": mttd,
                "mttd_s_se": mttd_se,
                "mitigation_pass1_pct": 100 * per_mit.mean() if len(per_mit) else float("nan"),
                "mitigation_pass1_pct_se": 100 * _se(per_mit),
                "mttr_s": mttr,
                "mttr_s_se": mttr_se,
            }
        )
    return pd.DataFrame(rows).set_index(["agent", "condition"]) if rows else pd.DataFrame()


PROXIMITY = (
    "proximity_cpu_cost",
    "proximity_ram_cost",
    "proximity_cpu_efficiency",
    "proximity_ram_efficiency",
)


def _macro(ran: pd.DataFrame, values: pd.Series) -> tuple[float, float]:
    """Macro average over scenarios of ``values`` (one per episode of ``ran``) ± its standard error."""
    per = values.groupby(ran["scenario_id"]).mean()
    return float(per.mean()), _se(per)


def _named(frames: RunFrames, ran: pd.DataFrame, score: str) -> pd.Series:
    """A named score per episode of ``ran`` (0 where the episode has none, as the report counts)."""
    sc = frames.scores[frames.scores["score"] == score].drop_duplicates(["run_id", "episode_id"])
    got = ran[["run_id", "episode_id"]].merge(sc[["run_id", "episode_id", "value"]], how="left")
    return pd.Series(got["value"].fillna(0.0).to_numpy(), index=ran.index)


PASS_K_COLUMNS = ("agent", "score", "estimator", "k", "pct")


def pass_k(frames: RunFrames, episodes: pd.DataFrame, scores: Sequence[str]) -> pd.DataFrame:
    """pass@k and pass^k (%) of the named ``scores`` over ``episodes`` (a part of
    :attr:`RunFrames.episodes`: one persona, fault scenarios only...) that ran, as ``itbench
    report``'s pass@k and pass^k tables compute them: per agent, score and k up to the fewest trials
    of a scenario, the macro average over scenarios of the unbiased estimators
    (``report/consistency.py``). An episode without the score did not pass (as the persona tables
    count it: give SRE's ``mitigation`` fault scenarios only, a control has none). Columns
    ``agent``, ``score``, ``estimator`` (``pass@k``, ``pass^k``), ``k``, ``pct``; no row when a
    scenario ran only once."""
    from .consistency import ESTIMATORS, macro_curve

    ran = episodes[episodes["scored"].astype(bool)]
    trials = ran.groupby(["agent", "scenario_id"]).size()
    kmax = int(trials.min()) if len(trials) else 0
    ks = list(range(1, kmax + 1))
    rows = []
    for name in scores if kmax >= 2 else ():
        passed = _named(frames, ran, name) >= 1.0
        counts = passed.groupby([ran["agent"], ran["scenario_id"]]).agg(["size", "sum"])
        for agent, per in counts.groupby(level="agent"):
            for estimator, fn in ESTIMATORS.items():
                per_scenario = [
                    {k: fn(int(n), int(c), k) for k in ks}
                    for n, c in zip(per["size"], per["sum"], strict=True)
                ]
                for k, v in zip(ks, macro_curve(per_scenario, ks), strict=True):
                    rows.append((agent, name, estimator, k, 100 * (v or 0.0)))
    return pd.DataFrame(rows, columns=list(PASS_K_COLUMNS))


def table6(frames: RunFrames) -> pd.DataFrame:
    """The paper's Table 6 for FinOps cost incidents on the twin, computed as ``itbench report``
    computes it: per agent, diagnosis and mitigation pass@1 (%, macro over scenarios ± standard
    error, over the episodes that ran) and the four proximity metrics (mean ± standard deviation
    over episodes, as the paper gives them)."""
    ep = frames.episodes
    fin = ep[(ep["persona"] == "finops") & (ep["category"] != "anomaly")]
    rows = []
    for agent, g in fin.groupby("agent", sort=True):
        ran = g[g["scored"].astype(bool)]
        row: dict[str, Any] = {"agent": agent}
        for col, name in (("diagnosis_correct", "diagnosis_pct"), ("mitigation_passed", "mitigation_pct")):
            m, s = _macro(ran, ran[col].fillna(False).astype(float))
            row[name], row[name + "_se"] = 100 * m, 100 * s
        sc = frames.scores
        for k in PROXIMITY:
            mine = sc[sc["score"] == k][["run_id", "episode_id", "value"]]
            vals = ran[["run_id", "episode_id"]].merge(mine, how="inner")["value"]
            row[k] = float(vals.mean()) if len(vals) else float("nan")
            row[k + "_std"] = float(vals.std(ddof=1)) if len(vals) >= 2 else float("nan")
        row["episodes"], row["bad_runs"] = len(g), len(g) - len(ran)
        rows.append(row)
    return pd.DataFrame(rows).set_index("agent") if rows else pd.DataFrame()


ANOMALY_SCORES = ("pinpointed", "root_cause_resource", "precision", "recall", "f1")


def anomaly_table(frames: RunFrames) -> pd.DataFrame:
    """FinOps cost anomaly detection as ``itbench report`` shows it: per agent, each of
    :data:`ANOMALY_SCORES` macro-averaged over scenarios ± standard error (over the episodes that
    ran; a missing score counts 0), and the agent's wall time."""
    ep = frames.episodes
    fin = ep[(ep["persona"] == "finops") & (ep["category"] == "anomaly")]
    rows = []
    for agent, g in fin.groupby("agent", sort=True):
        ran = g[g["scored"].astype(bool)]
        row: dict[str, Any] = {"agent": agent}
        for k in ANOMALY_SCORES:
            row[k], row[k + "_se"] = _macro(ran, _named(frames, ran, k))
        row["time_s"], row["time_s_se"] = float(ran["agent_wall_s"].mean()), _se(ran["agent_wall_s"])
        row["episodes"], row["bad_runs"] = len(g), len(g) - len(ran)
        rows.append(row)
    return pd.DataFrame(rows).set_index("agent") if rows else pd.DataFrame()


CISO_CLASSES = ("kyverno", "k8s-opa", "rhel-opa", "kyverno-update")
CISO_SCORES = ("detected", "compliant_clean", "strict", "generate_policy", "evidence_available")


def table5(frames: RunFrames) -> pd.DataFrame:
    """The paper's Table 5 (CISO) as ``itbench report`` computes it: per agent, ``detected`` pass@1
    (%) per class (``kyverno_pct``...) and over all (``detected_pct``), then ``compliant_clean``,
    ``strict``, ``generate_policy`` and ``evidence_available`` (%), each macro-averaged over
    scenarios ± standard error over the episodes that ran (a missing score counts 0); TTP, the
    agent's wall time over the episodes that passed."""
    ep = frames.episodes
    ciso = ep[ep["persona"] == "ciso"]
    rows = []
    for agent, g in ciso.groupby("agent", sort=True):
        ran = g[g["scored"].astype(bool)]
        row: dict[str, Any] = {"agent": agent}
        detected = _named(frames, ran, "detected")
        for c in CISO_CLASSES:
            mine = ran["category"] == c
            m, s = _macro(ran[mine], detected[mine]) if mine.any() else (float("nan"), float("nan"))
            row[f"{c}_pct"], row[f"{c}_pct_se"] = 100 * m, 100 * s
        for k in CISO_SCORES:
            m, s = _macro(ran, _named(frames, ran, k))
            row[f"{k}_pct"], row[f"{k}_pct_se"] = 100 * m, 100 * s
        passing = ran[detected >= 1.0]["agent_wall_s"]
        row["ttp_s"] = float(passing.mean()) if len(passing) else float("nan")
        row["ttp_s_se"] = _se(passing)
        row["episodes"], row["bad_runs"] = len(g), len(g) - len(ran)
        rows.append(row)
    return pd.DataFrame(rows).set_index("agent") if rows else pd.DataFrame()
