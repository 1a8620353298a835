"""A cost-anomaly scenario (``scenarios/finops/anomaly/*.yaml``): a seeded cloud estate whose daily
bill is generated (weekly seasonality, trends, noise), one injected anomaly on one resource of one
account, and benign look-alikes that a detector should not report.

The agent sees what ITBench-Lite gives it (``snapshots/finops/v0.1-finops-anomaly/Scenario-N``):
``anomaly.json`` (the date and account of the alert) and ``data.csv`` (``date, Account ID, CSP,
Cloud_Service, Application, Instance_Family, Price ($/hr), Num_Instances, unblended_cost``), and
answers ``{"resource": [{"name", "type"}]}``: the resource the anomaly comes from, named as the
data names it, with its type — the column it is a value of (``Account ID``, ``CSP``,
``Cloud_Service``, ``Application``, ``Instance_Family``).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ANOMALY_ID = re.compile(r"^finops/[a-z0-9][a-z0-9-]*-v\d+$")
LEVELS = ("Account ID", "CSP", "Cloud_Service", "Application", "Instance_Family")
"""The hierarchy of the data, coarse to fine; a resource's type is one of these column names."""
Level = Literal["CSP", "Cloud_Service", "Application", "Instance_Family"]
AnomalyKind = Literal["spike", "level_shift", "new_resource", "price_change", "drift"]
BenignKind = Literal["month_end_batch", "planned_migration", "weekly_batch", "growth"]

GOAL = (
    "A cost anomaly alert fired for cloud account {account} on {date}. The account's daily billing "
    "data is in `{data}` (columns: date, Account ID, CSP, Cloud_Service, Application, "
    "Instance_Family, Price ($/hr), Num_Instances, unblended_cost) and the alert in `{alert}`.\n"
    "Find the resource the anomaly comes from. Answer with JSON "
    '`{{"resource": [{{"name": <the resource as the data names it>, "type": <the column it is a '
    "value of: CSP, Cloud_Service, Application or Instance_Family>}}]}}`, listing only the "
    "resource(s) that caused the anomaly. Save it as `{answer}` in `{workdir}`.\n"
)


class Anomaly(BaseModel):
    """What is injected, on which resource, from when."""

    model_config = ConfigDict(extra="forbid")

    kind: AnomalyKind
    level: Level
    """The resource's type: the grain at which the anomaly lives (one application, one family...)."""
    day: int = Field(ge=30)
    """The alert's day, counted from the first day of the data (at least 30 days of history)."""
    magnitude: float = Field(gt=0)
    """Spike / level shift / drift: the factor on the resource's instances (2.0 = twice as many);
    price change: the factor on its price; new resource: its daily cost as a share of the account's."""
    ramp_days: int = Field(default=7, ge=2, le=30)
    """Drift only: days over which the resource grows to ``magnitude``."""


class Benign(BaseModel):
    """A look-alike: a change the data explains, which a detector should not report."""

    model_config = ConfigDict(extra="forbid")

    kind: BenignKind
    magnitude: float = Field(default=3.0, gt=0)
    day: int | None = Field(default=None, ge=1)
    """``planned_migration``: the day a workload moves between instance families (cost-neutral)."""


class AnomalyScenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    persona: Literal["finops"] = "finops"
    task_class: Literal["anomaly"] = "anomaly"
    name: str
    description: str
    complexity: Literal["easy", "medium", "hard"] = "medium"
    seed: int = 0
    start: date = date(2025, 1, 1)
    days: int = Field(default=0, ge=0)
    """Days of data (0: through the alert's day)."""
    accounts: int = Field(default=2, ge=1, le=6)
    applications: int = Field(default=5, ge=2, le=12)
    noise: float = Field(default=0.05, ge=0, le=0.5)
    """Relative day-to-day noise of instance counts."""
    anomaly: Anomaly
    benign: list[Benign] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> AnomalyScenario:
        if not ANOMALY_ID.match(self.id):
            raise ValueError(f"id {self.id!r} must look like finops/<name>-v<N>")
        if self.days and self.days <= self.anomaly.day:
            raise ValueError(f"days ({self.days}) must run past the alert's day ({self.anomaly.day})")
        if self.anomaly.kind == "new_resource" and self.anomaly.level not in (
            "Application",
            "Instance_Family",
        ):
            raise ValueError("a new resource is an Application or an Instance_Family")
        if self.anomaly.kind == "price_change" and self.anomaly.level != "Instance_Family":
            raise ValueError("a price change is on an Instance_Family")
        return self

    @property
    def total_days(self) -> int:
        return self.days or self.anomaly.day + 1
