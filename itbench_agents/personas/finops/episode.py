"""A FinOps anomaly episode, in the harness's lifecycle (``harness/environment.py``):

    deploy   generate the scenario's bill (deterministic: the scenario is its seed)
    inject   lay out ITBench-Lite's snapshot in the agent's work folder: ``anomaly.json`` (the alert:
             date and account) and ``data.csv``
    task     the goal (``anomaly_spec.GOAL``); no cluster, no credential
    scores   the agent's ``answer.json`` against the ground truth, which never enters the work
             folder: ``pinpointed`` (the pass: every true resource named, at least half of the named
             ones right), ITBench-Lite's ``root_cause_resource``, ``precision``, ``recall``, ``f1``

An answer that is missing or malformed scores zero with its reason.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ...core.endpoints import Endpoints
from ...core.score import Score
from ...core.task import Limits, Task
from ...harness.environment import AlertCheck
from .anomaly_score import AnomalyScore, score_answer
from .anomaly_spec import GOAL, AnomalyScenario
from .billing import Bill, generate
from .snapshot import write_snapshot

ANSWER = "answer.json"
MAX_ANSWER_BYTES = 1 << 20


class AnomalyEnvironment:
    def __init__(self, scenario: AnomalyScenario, *, seed: int, workdir: str | Path) -> None:
        self.scenario = scenario
        self.seed = seed
        self.workdir = Path(workdir).resolve()
        self.bill: Bill | None = None
        self.answers = self.workdir
        """Where the answer is read: the work folder, or its copy taken when the agent's turn ended."""
        self.result: AnomalyScore | None = None

    def deploy(self) -> None:
        self.bill = generate(self.scenario)

    def inject(self) -> list[str]:
        assert self.bill is not None
        write_snapshot(self.bill, self.workdir)
        return [f"wrote data.csv ({len(self.bill.rows)} rows) and anomaly.json"]

    def wait_for_alerts(self) -> AlertCheck:
        assert self.bill is not None
        a = self.bill.alert
        return AlertCheck(firing=[f'CostAnomaly{{account_id="{a["account_id"]}",date="{a["date"]}"}}'])

    def task(self, limits: Limits) -> Task:
        assert self.bill is not None
        endpoints = Endpoints(kubeconfig="", kube_url="")  # nothing to reach: the data is in the folder
        endpoints.write(self.workdir / "endpoints.json")
        goal = GOAL.format(
            account=self.bill.alert["account_id"],
            date=self.bill.alert["date"],
            data=str(self.workdir / "data.csv"),
            alert=str(self.workdir / "anomaly.json"),
            answer=ANSWER,
            workdir=str(self.workdir),
        )
        return Task(
            goal=goal,
            kind="anomaly",
            persona="finops",
            endpoints=endpoints,
            workdir=str(self.workdir),
            limits=limits,
            on_twin=False,
        )

    def score_from(self, folder: Path) -> None:
        """Score the answer the work folder held when the agent's turn ended (``folder``, the
        harness's copy), whatever a late writer does to the live folder."""
        self.answers = Path(folder)

    def now(self) -> float:
        return time.time()

    def settle(self) -> None:
        pass

    def scores(self) -> dict[str, Score]:
        assert self.bill is not None
        raw, why = read_answer(self.answers)
        result = score_answer(raw, self.bill.truth) if why is None else AnomalyScore(0, 0, 0, 0, 0, 0, why)
        self.result = result
        return anomaly_scores(result, self.bill.truth)

    def privileged_context(self) -> dict[str, Any]:
        assert self.bill is not None
        return {"scenario": self.scenario, "truth": list(self.bill.truth)}

    def teardown(self) -> None:
        pass


def read_answer(workdir: Path) -> tuple[Any, str | None]:
    f = workdir / ANSWER
    if not f.is_file():
        return None, f"no {ANSWER} in the work folder"
    if f.stat().st_size > MAX_ANSWER_BYTES:
        return None, f"{ANSWER} is larger than {MAX_ANSWER_BYTES} bytes"
    try:
        return json.loads(f.read_text()), None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return None, f"{ANSWER} is not JSON: {e}"


SCORES = ("pinpointed", "root_cause_resource", "precision", "recall", "f1")


def anomaly_scores(r: AnomalyScore, truth: list[dict[str, str]]) -> dict[str, Score]:
    want = ", ".join(f"{t['name']} ({t['type']})" for t in truth)
    why = r.reason or f"{r.named} resource(s) named; the anomaly comes from {want}"
    meta = {"named": r.named}
    return {
        "pinpointed": Score(value=r.pinpointed, explanation=why, metadata=meta),
        "root_cause_resource": Score(value=r.root_cause_resource, explanation=why, metadata=meta),
        "precision": Score(value=r.precision, explanation=why),
        "recall": Score(value=r.recall, explanation=why),
        "f1": Score(value=r.f1, explanation=why),
    }
