"""``finops-heuristic``: the FinOps baseline without an LLM. On an anomaly task it reads the work
folder's ``anomaly.json`` and ``data.csv`` and answers with the seasonal z-score detector
(``zscore.py``); it needs nothing but the two files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

from ..base import AgentConfig, AgentOutput, EventSink, Task
from .zscore import answer


class FinopsHeuristicAgent:
    name = "finops-heuristic"

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        t0 = time.perf_counter()
        if task.kind != "anomaly":
            events(
                {"type": "agent_message", "content": f"finops-heuristic: no strategy for a {task.kind} task"}
            )
            return AgentOutput(steps=0)
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


def make_agent(config: AgentConfig) -> FinopsHeuristicAgent:
    """FinOps baseline without an LLM: a seasonal z-score detector over the bill (anomaly tasks)."""
    return FinopsHeuristicAgent()
