"""Blind strategies for FinOps anomaly scenarios (``itbench scenarios audit --suite finops``): answers
that read the bill without finding anything, each of which must not pass.

- ``shotgun``: every CSP, service, application and family of the alert's account;
- ``account``: the account itself;
- ``biggest-spender``: the application that costs most on the alert's day;
- ``constant``: the answer that is most often right across the library (judged on the library as a
  whole, as the SRE constant answer is: a strategy that needs no data).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ...core.agent import EventSink
from ...core.output import AgentOutput
from ...core.task import Task
from ..base import AgentConfig

Answer = dict[str, list[dict[str, str]]]
Strategy = Callable[[pd.DataFrame, dict[str, str]], Answer]
LEVELS = ("CSP", "Cloud_Service", "Application", "Instance_Family")


def shotgun(df: pd.DataFrame, alert: dict[str, str]) -> Answer:
    acct = df[df["Account ID"].astype(str) == str(alert["account_id"])]
    return {"resource": [{"name": str(v), "type": lv} for lv in LEVELS for v in sorted(acct[lv].unique())]}


def account(df: pd.DataFrame, alert: dict[str, str]) -> Answer:
    return {"resource": [{"name": str(alert["account_id"]), "type": "Account ID"}]}


def biggest_spender(df: pd.DataFrame, alert: dict[str, str]) -> Answer:
    acct = df[(df["Account ID"].astype(str) == str(alert["account_id"])) & (df["date"] == alert["date"])]
    if acct.empty:
        return {"resource": []}
    top = acct.groupby("Application")["unblended_cost"].sum().idxmax()
    return {"resource": [{"name": str(top), "type": "Application"}]}


def constant(answer: Answer) -> Strategy:
    return lambda df, alert: answer


STRATEGIES: dict[str, Strategy] = {"shotgun": shotgun, "account": account, "biggest-spender": biggest_spender}


class BlindAnomalyAgent:
    def __init__(self, name: str, strategy: Strategy) -> None:
        self.name = f"audit-finops-{name}"
        self.strategy = strategy

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        work = Path(task.workdir)
        alert = json.loads((work / "anomaly.json").read_text())
        df = pd.read_csv(work / "data.csv", dtype={"Account ID": str}, keep_default_na=False)
        answer = self.strategy(df, alert)
        (work / "answer.json").write_text(json.dumps(answer) + "\n")
        events({"type": "agent_message", "content": f"{self.name}: {len(answer['resource'])} resource(s)"})
        return AgentOutput(steps=1, extra={"answer": answer})


def make_shotgun(config: AgentConfig) -> BlindAnomalyAgent:
    return BlindAnomalyAgent("shotgun", shotgun)


def make_account(config: AgentConfig) -> BlindAnomalyAgent:
    return BlindAnomalyAgent("account", account)


def make_biggest_spender(config: AgentConfig) -> BlindAnomalyAgent:
    return BlindAnomalyAgent("biggest-spender", biggest_spender)
