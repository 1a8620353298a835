"""``itbench scenarios validate --suite finops``: every anomaly scenario proven answerable and
unforgeable before anyone is scored on it.

- the bill generates (the estate can carry the anomaly on the named level alone);
- the true resource is in the alert's account on the alert's day;
- its signal is there: its cost on the day is ``≥ 3σ`` above its seasonal baseline (the same
  weekday of the previous six weeks; previous month ends for a month-end day) and carries at least
  a quarter of the account's move — or it is new (absent before), or its price moved;
- the true resource is not the biggest spender of its kind in the account on the alert's day
  (naming the biggest spender is not a way to pass);
- the reference answer passes, an empty answer and a shotgun answer (every resource of the account)
  do not;
- every benign look-alike declared was planted;
- across the library, no two scenarios share a true resource (a constant answer passes one at most).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pandas as pd

from .anomaly_score import score_answer
from .anomaly_spec import AnomalyScenario
from .billing import Bill, generate
from .seasonal import baseline_days

SIGNAL_Z = 3.0


@dataclass
class AnomalyValidation:
    scenario_id: str
    ok: bool = True
    problems: list[str] = field(default_factory=list)
    signal: str = ""
    rows: int = 0

    def fail(self, why: str) -> None:
        self.ok = False
        self.problems.append(why)


def bill_frame(bill: Bill) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(bill.csv_text()), dtype={"Account ID": str}, keep_default_na=False)


def shotgun(df: pd.DataFrame, account: str) -> dict[str, list[dict[str, str]]]:
    """Every resource of the account at every level: what a blind answer names."""
    acct = df[df["Account ID"] == account]
    return {
        "resource": [
            {"name": str(v), "type": level}
            for level in ("CSP", "Cloud_Service", "Application", "Instance_Family")
            for v in sorted(acct[level].unique())
        ]
    }


def validate_anomaly(sc: AnomalyScenario) -> AnomalyValidation:
    v = AnomalyValidation(sc.id)
    try:
        bill = generate(sc)
    except ValueError as e:
        v.fail(f"the bill does not generate: {e}")
        return v
    v.rows = len(bill.rows)
    df = bill_frame(bill)
    account, day = bill.alert["account_id"], bill.alert["date"]
    acct = df[df["Account ID"] == account]
    (truth,) = bill.truth
    level, name = truth["type"], truth["name"]
    today = acct[acct["date"] == day]
    if name not in set(today[level]):
        v.fail(f"{name} ({level}) has no cost in account {account} on {day}")
        return v
    before = acct[acct["date"] < day]
    if sc.anomaly.kind == "new_resource":
        if name in set(before[level]):
            v.fail(f"{name} ({level}) is billed before {day}: it is not new")
        v.signal = f"new {level} {name}"
    elif sc.anomaly.kind == "price_change":
        p_now = float(today[today[level] == name]["Price ($/hr)"].mean())
        p_then = float(before[before[level] == name]["Price ($/hr)"].iloc[-1])
        if abs(p_now / p_then - 1) < 0.02:
            v.fail(f"the price of {name} did not move ({p_then} → {p_now})")
        v.signal = f"price {p_then} → {p_now}"
    else:
        days = baseline_days(day, set(acct["date"]), 6)
        base = acct[acct["date"].isin(days)]
        series = (
            base[base[level] == name].groupby("date")["unblended_cost"].sum().reindex(days, fill_value=0.0)
        )
        mean, std = float(series.mean()), float(series.std(ddof=0))
        now = float(today[today[level] == name]["unblended_cost"].sum())
        z = (now - mean) / max(std, 0.05 * mean, 1.0)
        acct_move = float(today["unblended_cost"].sum()) - float(
            base.groupby("date")["unblended_cost"].sum().mean()
        )
        share = (now - mean) / acct_move if acct_move > 0 else 0.0
        v.signal = f"z {z:.1f}, {100 * share:.0f}% of the account's move"
        if z < SIGNAL_Z:
            v.fail(f"{name} ({level}) moves only {z:.1f}σ on {day}: nothing to detect")
        if share < 0.25:
            v.fail(f"{name} ({level}) carries {100 * share:.0f}% of the account's move on {day}")
    top = today.groupby(level)["unblended_cost"].sum().idxmax()
    if str(top) == name:
        v.fail(f"{name} is the biggest {level} of the account on {day}: naming the biggest spender finds it")
    ref = score_answer({"resource": bill.truth}, bill.truth)
    if not ref.pinpointed:
        v.fail("the reference answer does not pass")
    if score_answer({"resource": []}, bill.truth).pinpointed:
        v.fail("an empty answer passes")
    if score_answer(shotgun(df, account), bill.truth).pinpointed:
        v.fail("naming every resource of the account passes")
    if len(bill.benign) != len(sc.benign):
        v.fail(f"{len(sc.benign)} look-alike(s) declared, {len(bill.benign)} planted")
    return v


def library_problems(scenarios: list[AnomalyScenario]) -> list[str]:
    """What is wrong with the library as a whole: true resources shared between scenarios."""
    seen: dict[tuple[str, str], str] = {}
    out = []
    for sc in scenarios:
        try:
            (t,) = generate(sc).truth
        except ValueError:
            continue
        key = (t["name"], t["type"])
        if key in seen:
            out.append(
                f"{sc.id} and {seen[key]} both come from {t['name']} ({t['type']}): a constant answer passes both"
            )
        seen.setdefault(key, sc.id)
    return out
