"""``finops-heuristic``: the FinOps baseline without an LLM. On an anomaly task it reads the work
folder's ``anomaly.json`` and ``data.csv`` and answers with the seasonal z-score detector
(``zscore.py``); on a cost incident on a cluster it runs the rightsizing recommender
(``rightsize.py``: OpenCost's usage per container against the requests, the HPAs' targets) and
applies what it recommends with the kubectl tool, naming what it changed as the diagnosis."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

from ...core.agent import EventSink
from ...core.output import AgentOutput
from ...core.task import Task
from ..base import AgentConfig
from .zscore import answer


class FinopsHeuristicAgent:
    name = "finops-heuristic"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        t0 = time.perf_counter()
        if task.kind != "anomaly":  # a cost incident on a cluster
            return self.rightsize(task, events, t0)
        work = Path(task.workdir)
        try:
            alert = json.loads((work / "anomaly.json").read_text())
            df = pd.read_csv(work / "data.csv", dtype={"Account ID": str}, keep_default_na=False)
        except (OSError, ValueError) as e:
            events({"type": "agent_message", "content": f"finops-heuristic: cannot read the data: {e}"})
            return AgentOutput(steps=1)
        events({"type": "tool_call", "tool": "zscore", "args": {"rows": len(df), "alert": alert}})
        result = answer(df, alert)
        events({"type": "observation", "tool": "zscore", "content": json.dumps(result)})
        (work / "answer.json").write_text(json.dumps(result, indent=2) + "\n")
        return AgentOutput(steps=1, diagnosis_time_s=time.perf_counter() - t0, extra={"answer": result})

    def rightsize(self, task: Task, events: EventSink, t0: float) -> AgentOutput:
        from ...core.output import Diagnosis, DiagnosisEntity
        from ...tools.context import ToolContext
        from .rightsize import rightsize

        ctx = ToolContext.for_task(task)
        changes = [c for ns in task.namespaces or ["default"] for c in rightsize(ctx, ns, events)]
        diagnosis = Diagnosis(
            entities=[
                DiagnosisEntity(
                    name=c.entity,
                    contributing_factor=True,
                    reasoning=c.reason,
                    evidence="OpenCost usage vs requests",
                )
                for c in changes
            ]
        )
        events({"type": "agent_message", "content": f"finops-heuristic: {len(changes)} change(s)"})
        return AgentOutput(
            diagnosis=diagnosis,
            mitigation_actions=[cmd for c in changes for cmd in c.commands],
            steps=1 + sum(len(c.commands) for c in changes),
            diagnosis_time_s=time.perf_counter() - t0,
        )


def make_agent(config: AgentConfig) -> FinopsHeuristicAgent:
    """FinOps baseline without an LLM: a seasonal z-score detector (anomalies), a rightsizing recommender (cost incidents)."""
    return FinopsHeuristicAgent()
