"""``itbench scenarios audit --suite finops``: the blind strategies of ``agents/audit/finops.py`` scored
on every anomaly scenario (directly: an anomaly episode changes nothing, so the answer alone is
the episode), beside the ``finops-heuristic`` baseline for scale.

A strategy fails the audit when it pinpoints more than ``BLIND_MAX`` of the scenarios (``shotgun``
and ``account``: any); the oracle must pinpoint all of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ...agents.audit.finops import STRATEGIES, Strategy, constant
from .anomaly_score import score_answer
from .anomaly_spec import AnomalyScenario
from .billing import generate
from .validate import bill_frame

BLIND_MAX = 0.10
NEVER = ("shotgun", "account")


@dataclass
class StrategyResult:
    name: str
    pinpointed: list[str] = field(default_factory=list)
    root_cause: int = 0
    f1: float = 0.0
    scenarios: int = 0

    @property
    def rate(self) -> float:
        return len(self.pinpointed) / self.scenarios if self.scenarios else 0.0

    @property
    def limit(self) -> float | None:
        if self.name in NEVER:
            return 0.0
        return BLIND_MAX if self.name != "finops-heuristic" else None

    @property
    def ok(self) -> bool:
        return self.limit is None or self.rate <= self.limit


def audit_anomalies(scenarios: list[AnomalyScenario]) -> list[StrategyResult]:
    from ...agents.finops_heuristic.zscore import answer as heuristic

    bills = [(sc, generate(sc)) for sc in scenarios]
    common = Counter((b.truth[0]["name"], b.truth[0]["type"]) for _, b in bills).most_common(1)
    strategies: dict[str, Strategy] = dict(STRATEGIES)
    if common:
        (name, kind), _ = common[0]
        strategies["constant"] = constant({"resource": [{"name": name, "type": kind}]})
    strategies["finops-heuristic"] = heuristic
    out = []
    for sname, strategy in strategies.items():
        res = StrategyResult(sname, scenarios=len(bills))
        for sc, bill in bills:
            s = score_answer(strategy(bill_frame(bill), bill.alert), bill.truth)
            if s.pinpointed:
                res.pinpointed.append(sc.id)
            res.root_cause += int(s.root_cause_resource)
            res.f1 += s.f1 / len(bills)
        out.append(res)
    return out
