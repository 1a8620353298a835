"""Daily cloud bills generated from a seeded model of an estate, with one injected anomaly.

The estate: accounts (12-digit ids), each on one or two CSPs; per CSP its services and instance
families (list prices per hour); applications running on one service with two instance families
each, so that an application and an instance family are never the same thing. A *line* is one
(account, CSP, service, application, family) and bills ``price × instances × 24`` per day; its
instance count follows a base level, a weekly pattern (weekends lighter), a slow trend and noise.

Everything comes from ``numpy.random.default_rng(seed)``: the same scenario gives the same bytes.
"""

from __future__ import annotations

import calendar
import csv
import io
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from .anomaly_spec import AnomalyScenario

COLUMNS = (
    "date",
    "Account ID",
    "CSP",
    "Cloud_Service",
    "Application",
    "Instance_Family",
    "Price ($/hr)",
    "Num_Instances",
    "unblended_cost",
)
CATALOGUE: dict[str, dict[str, list[str]]] = {
    "AWS": {"services": ["EC2", "EKS", "RDS", "EMR"], "families": ["m5", "c5", "r5", "t3", "m6i", "c6g"]},
    "Azure": {
        "services": ["Virtual Machines", "AKS", "SQL Database", "HDInsight"],
        "families": ["Dv5", "Ev5", "Fsv2", "Bs", "Dasv5"],
    },
    "GCP": {
        "services": ["Compute Engine", "GKE", "Cloud SQL", "Dataproc"],
        "families": ["n2", "e2", "c2", "n2d", "t2d"],
    },
}
GPU_FAMILIES = {"AWS": "p4d", "Azure": "NCv3", "GCP": "a2"}
PRICES = {  # list price per instance-hour of a mid-size member of the family
    "m5": 0.192, "c5": 0.17, "r5": 0.252, "t3": 0.0832, "m6i": 0.192, "c6g": 0.136, "p4d": 32.77,
    "Dv5": 0.192, "Ev5": 0.252, "Fsv2": 0.169, "Bs": 0.0832, "Dasv5": 0.172, "NCv3": 3.06,
    "n2": 0.194, "e2": 0.134, "c2": 0.209, "n2d": 0.169, "t2d": 0.169, "a2": 3.67,
}  # fmt: skip
APP_NAMES = [
    "checkout", "search", "catalog", "payments", "recommendations", "analytics", "web-frontend",
    "notifications", "inventory", "reporting", "ml-training", "auth", "media-transcode", "ledger",
]  # fmt: skip
BATCH_APP = "month-end-close"
NEW_APPS = [
    "shadow-ai-pilot",
    "genai-sandbox",
    "data-lake-poc",
    "vendor-demo",
    "perf-lab",
    "growth-experiment",
]
"""Names a new application gets (seeded): no constant answer finds every new application."""


@dataclass
class Line:
    account: str
    csp: str
    service: str
    app: str
    family: str
    price: float
    base: float
    weekend: float
    trend: float
    start_day: int = 0
    price_from: list[tuple[int, float]] = field(default_factory=list)
    """(day, factor) price changes."""
    scale: np.ndarray | None = None
    """Per-day factor on instances (anomalies and benign changes), 1 where unset."""

    def key(self, level: str) -> str:
        return {
            "Account ID": self.account,
            "CSP": self.csp,
            "Cloud_Service": self.service,
            "Application": self.app,
            "Instance_Family": self.family,
        }[level]


@dataclass
class Bill:
    rows: list[tuple[str, str, str, str, str, str, float, int, float]]
    alert: dict[str, str]
    """``anomaly.json``: ``{"date", "account_id"}``."""
    truth: list[dict[str, str]]
    """The resources the anomaly comes from: ``[{"name", "type"}]``."""
    benign: list[dict[str, str]]
    """The look-alikes planted (what they touch), for validation and the record."""

    def csv_text(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in self.rows:
            w.writerow((r[0], r[1], r[2], r[3], r[4], r[5], f"{r[6]:.4f}", r[7], f"{r[8]:.2f}"))
        return buf.getvalue()


def _estate(sc: AnomalyScenario, rng: np.random.Generator) -> list[Line]:
    lines: list[Line] = []
    apps = list(APP_NAMES)
    rng.shuffle(apps)
    app_iter = iter(apps)
    for a in range(sc.accounts):
        account = str(int(rng.integers(10**11, 10**12)))
        csps = list(
            rng.choice(sorted(CATALOGUE), size=2 if a == 0 else int(rng.integers(1, 3)), replace=False)
        )
        n_apps = max(2, sc.applications - a)
        for i in range(n_apps):
            csp = str(csps[i % len(csps)])
            cat = CATALOGUE[csp]
            service = str(cat["services"][int(rng.integers(0, 2)) if i % 3 else i % len(cat["services"])])
            fams = [str(f) for f in rng.choice(cat["families"][:4], size=2, replace=False)]
            try:
                app = next(app_iter)
            except StopIteration:
                app = f"app-{a}-{i}"
            for fam in fams:
                lines.append(
                    Line(
                        account=account,
                        csp=csp,
                        service=service,
                        app=app,
                        family=fam,
                        price=PRICES[fam],
                        base=float(rng.integers(4, 40)),
                        weekend=float(rng.uniform(0.55, 0.95)),
                        trend=float(rng.uniform(0.0, 0.002)),
                    )
                )
    return lines


def _pick(
    lines: list[Line], account: str, level: str, rng: np.random.Generator, magnitude: float = 1.0
) -> str:
    """A resource of the account at ``level`` that is not also a resource at another level (an
    application with two families, a family two applications use, a service two applications
    share, a CSP beside another) and that, grown by ``magnitude``, still costs less than the
    biggest of its peers — so that "the biggest spender" is not the answer; the smallest candidate
    when none qualifies."""
    mine = [ln for ln in lines if ln.account == account]
    counts: dict[str, set[str]] = {}
    other = {
        "Application": "Instance_Family",
        "Instance_Family": "Application",
        "Cloud_Service": "Application",
        "CSP": "Cloud_Service",
    }[level]
    for ln in mine:
        counts.setdefault(ln.key(level), set()).add(ln.key(other))
    ok = sorted(k for k, v in counts.items() if len(v) >= 2 and k != BATCH_APP)
    if level == "CSP" and len({ln.csp for ln in mine}) < 2:
        ok = []
    if not ok:
        raise ValueError(f"the estate has no {level} that can carry the anomaly on its own; change the seed")
    cost: dict[str, float] = {}
    for ln in mine:
        cost[ln.key(level)] = cost.get(ln.key(level), 0.0) + ln.price * ln.base * 24
    hidden = [
        k for k in ok if cost[k] * max(magnitude, 1.0) * 1.3 < max(c for kk, c in cost.items() if kk != k)
    ]
    if not hidden:
        return min(ok, key=lambda k: cost[k])
    return str(hidden[int(rng.integers(0, len(hidden)))])


def generate(sc: AnomalyScenario) -> Bill:
    """The scenario's bill, its alert and its ground truth."""
    rng = np.random.default_rng(sc.seed)
    lines = _estate(sc, rng)
    n = sc.total_days
    d0 = sc.anomaly.day
    account = lines[0].account
    for ln in lines:
        ln.scale = np.ones(n)
    benign_info: list[dict[str, str]] = []
    for b in sc.benign:
        benign_info.append(_plant_benign(b, lines, account, sc, rng))
    an = sc.anomaly
    truth_name = ""
    if an.kind == "new_resource":
        target_line = next(ln for ln in lines if ln.account == account)
        total = sum(ln.price * ln.base * 24 for ln in lines if ln.account == account)
        if an.level == "Application":  # a new application on a family the account runs
            fam = target_line.family
            app = NEW_APPS[int(rng.integers(0, len(NEW_APPS)))]
            truth_name = app
        else:  # a family the account never ran, under an existing application
            used = {ln.family for ln in lines if ln.account == account}
            pool = [
                f
                for f in [*CATALOGUE[target_line.csp]["families"], GPU_FAMILIES[target_line.csp]]
                if f not in used
            ]
            fam = pool[int(rng.integers(0, len(pool)))]
            app = target_line.app
            truth_name = fam
        inst = max(1.0, round(an.magnitude * total / (PRICES[fam] * 24)))
        lines.append(
            Line(
                account,
                target_line.csp,
                target_line.service,
                app,
                fam,
                PRICES[fam],
                inst,
                1.0,
                0.0,
                start_day=d0,
            )
        )
        lines[-1].scale = np.ones(n)
    else:
        truth_name = _pick(lines, account, an.level, rng, an.magnitude)
        hit = [ln for ln in lines if ln.account == account and ln.key(an.level) == truth_name]
        for ln in hit:
            assert ln.scale is not None
            if an.kind == "spike":
                ln.scale[d0] *= an.magnitude
            elif an.kind == "level_shift":
                ln.scale[d0:] *= an.magnitude
            elif an.kind == "drift":
                start = d0 - an.ramp_days + 1
                ramp = np.linspace(1.0, an.magnitude, an.ramp_days)
                ln.scale[start : d0 + 1] *= ramp
                ln.scale[d0 + 1 :] *= an.magnitude
            elif an.kind == "price_change":
                ln.price_from.append((d0, an.magnitude))
    rows = _rows(lines, sc, rng)
    day = sc.start + timedelta(days=d0)
    return Bill(
        rows,
        {"date": day.isoformat(), "account_id": account},
        [{"name": truth_name, "type": an.level}],
        benign_info,
    )


def _plant_benign(
    b: object, lines: list[Line], account: str, sc: AnomalyScenario, rng: np.random.Generator
) -> dict[str, str]:
    from .anomaly_spec import Benign

    assert isinstance(b, Benign)
    n = sc.total_days
    mine = [ln for ln in lines if ln.account == account]
    if b.kind == "month_end_batch":
        ref = mine[0]
        fam = ref.family
        ln = Line(account, ref.csp, ref.service, BATCH_APP, fam, PRICES[fam], 2.0, 1.0, 0.0)
        ln.scale = np.ones(n)
        for i in range(n):
            d = sc.start + timedelta(days=i)
            if d.day == calendar.monthrange(d.year, d.month)[1]:
                ln.scale[i] = b.magnitude * 10
        lines.append(ln)
        return {"kind": b.kind, "Application": BATCH_APP}
    if b.kind == "planned_migration":
        day = b.day if b.day is not None else max(1, sc.anomaly.day - 2)
        ln = mine[int(rng.integers(0, len(mine)))]
        cat = CATALOGUE[ln.csp]["families"]
        target = next(f for f in cat[4:] + cat if f not in {x.family for x in mine if x.app == ln.app})
        moved = Line(
            account,
            ln.csp,
            ln.service,
            ln.app,
            target,
            PRICES[target],
            ln.base * ln.price / PRICES[target],
            ln.weekend,
            ln.trend,
            start_day=day,
        )
        moved.scale = np.ones(n)
        assert ln.scale is not None
        ln.scale[day:] = 0.0  # the old family's instances are all moved
        lines.append(moved)
        return {"kind": b.kind, "Application": ln.app, "from": ln.family, "to": target}
    ln = mine[int(rng.integers(0, len(mine)))]
    assert ln.scale is not None
    if b.kind == "weekly_batch":
        for i in range(n):
            if (sc.start + timedelta(days=i)).weekday() == 0:
                ln.scale[i] *= b.magnitude
        return {"kind": b.kind, "Application": ln.app, "Instance_Family": ln.family}
    ln.trend = 0.01 * b.magnitude / 3.0  # growth: steady, from the first day
    return {"kind": b.kind, "Application": ln.app, "Instance_Family": ln.family}


def _rows(
    lines: list[Line], sc: AnomalyScenario, rng: np.random.Generator
) -> list[tuple[str, str, str, str, str, str, float, int, float]]:
    n = sc.total_days
    days = np.arange(n)
    weekday = np.asarray([(sc.start + timedelta(days=int(i))).weekday() for i in days])
    out = []
    per_line = []
    for ln in lines:
        seasonal = np.where(weekday >= 5, ln.weekend, 1.0)
        noise = rng.normal(1.0, sc.noise, n)
        inst = (
            ln.base * (1 + ln.trend * days) * seasonal * noise * (ln.scale if ln.scale is not None else 1.0)
        )
        inst = np.maximum(np.rint(inst), 0).astype(int)
        price = np.full(n, ln.price)
        for day, factor in ln.price_from:
            price[day:] *= factor
        per_line.append((ln, inst, price))
    for i in days:
        d = (sc.start + timedelta(days=int(i))).isoformat()
        for ln, inst, price in per_line:
            if i < ln.start_day or inst[i] <= 0:
                continue
            p = round(float(price[i]), 4)
            out.append(
                (
                    d,
                    ln.account,
                    ln.csp,
                    ln.service,
                    ln.app,
                    ln.family,
                    p,
                    int(inst[i]),
                    round(p * int(inst[i]) * 24, 2),
                )
            )
    return out
