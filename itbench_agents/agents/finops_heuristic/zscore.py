"""A seasonal z-score detector, the non-LLM baseline a FinOps analyst would write first.

For the alert's account and day, every resource at every level of the hierarchy (CSP, service,
application, instance family) gets a daily cost series; its expected cost on the alert's day is
the mean of the same weekday in the previous ``weeks`` weeks (seasonality first), its spread their
standard deviation (at least 5 % of the mean). Month-end days are compared with previous month
ends, and left out of ordinary baselines. A resource with no history is new. The answer is the
resource at the finest level where the account's move is concentrated in one resource (its
deviation significant, ``z ≥ threshold``, at least half the account's and 90 % of what moved at
that level); a family billed at a new price, then a resource that did not exist before and
carries the move, are reported first.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, timedelta

import pandas as pd

FINE_TO_COARSE = ("Instance_Family", "Application", "Cloud_Service", "CSP")


@dataclass(frozen=True)
class Finding:
    name: str
    type: str
    deviation: float
    z: float


def _month_end(d: date) -> bool:
    return d.day == calendar.monthrange(d.year, d.month)[1]


def _baseline_days(day: date, available: set[str], weeks: int) -> list[str]:
    if _month_end(day):
        out, y, m = [], day.year, day.month
        for _ in range(weeks):
            m -= 1
            if m == 0:
                y, m = y - 1, 12
            d = date(y, m, calendar.monthrange(y, m)[1]).isoformat()
            if d in available:
                out.append(d)
        return out
    days = [(day - timedelta(weeks=k)) for k in range(1, weeks + 1)]
    return [d.isoformat() for d in days if d.isoformat() in available and not _month_end(d)]


def detect(
    df: pd.DataFrame, alert: dict[str, str], *, weeks: int = 6, threshold: float = 3.0
) -> list[Finding]:
    """The resources to report for the alert (most often one)."""
    acct = df[df["Account ID"].astype(str) == str(alert["account_id"])]
    day = date.fromisoformat(alert["date"])
    available = set(acct["date"].unique())
    base_days = _baseline_days(day, available, weeks)
    if not base_days:
        return []
    today = acct[acct["date"] == day.isoformat()]
    hist = acct[acct["date"].isin(base_days)]
    total_now = float(today["unblended_cost"].sum())
    total_exp = float(hist.groupby("date")["unblended_cost"].sum().mean())
    account_dev = total_now - total_exp
    findings: dict[str, list[Finding]] = {}
    new: list[Finding] = []
    for level in FINE_TO_COARSE:
        now = today.groupby(level)["unblended_cost"].sum()
        past = hist.groupby([level, "date"])["unblended_cost"].sum().unstack(fill_value=0.0)
        for name, cost in now.items():
            if name in past.index:
                series = past.loc[name].reindex(base_days, fill_value=0.0)
                mean, std = float(series.mean()), float(series.std(ddof=0))
            else:
                mean, std = 0.0, 0.0
            dev = float(cost) - mean
            f = Finding(str(name), level, dev, dev / max(std, 0.05 * mean, 1.0))
            findings.setdefault(level, []).append(f)
            if mean == 0.0 and name not in set(acct[level][acct["date"] < day.isoformat()]):
                new.append(f)
    # a price change: the same family billed at another price than in the baseline days
    p_now = today.groupby("Instance_Family")["Price ($/hr)"].mean()
    p_past = hist.groupby("Instance_Family")["Price ($/hr)"].mean()
    moved = [
        Finding(str(name), "Instance_Family", float(price) - float(p_past[name]), 99.0)
        for name, price in p_now.items()
        if name in p_past.index
        and float(p_past[name]) > 0
        and abs(float(price) / float(p_past[name]) - 1) > 0.02
    ]
    if moved:
        return [max(moved, key=lambda f: abs(f.deviation))]
    if account_dev <= 0:
        return []
    # something that did not exist before and carries the move: the coarsest such (a new
    # application brings its families along; a new family under an old application is the family)
    carrying_new = [f for f in new if f.deviation >= 0.5 * account_dev]
    if carrying_new:
        rank = {lvl: i for i, lvl in enumerate(FINE_TO_COARSE)}
        return [max(carrying_new, key=lambda f: rank[f.type])]
    # else the finest level at which the move is concentrated in one resource
    for level in FINE_TO_COARSE:
        moving = [f for f in findings.get(level, []) if f.z >= 2.0 and f.deviation > 0]
        if not moving:
            continue
        top = max(moving, key=lambda f: f.deviation)
        if (
            top.z >= threshold
            and top.deviation >= 0.5 * account_dev
            and top.deviation >= 0.9 * sum(f.deviation for f in moving)
        ):
            return [top]
    return []


def answer(df: pd.DataFrame, alert: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    """The detector's answer in the agents' output format."""
    return {"resource": [{"name": f.name, "type": f.type} for f in detect(df, alert)]}
