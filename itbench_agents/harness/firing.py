"""The alerts firing now, from Prometheus' alerts API (``GET /api/v1/alerts``), and the scenario's
expected alerts matched against them: what the alert wait, the churn, the end-state checks and the
live backend's quiet wait read.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import requests

from ..scenario.spec import ExpectedAlert
from .alert_wait import alerting_rules


def alert_label(a: ExpectedAlert) -> str:
    if not a.labels:
        return a.name
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(a.labels.items()))
    return f"{a.name}{{{inner}}}"


def firing_alerts(prometheus_url: str, names: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Alerts in state ``firing`` from ``GET /api/v1/alerts`` (Prometheus' wire format); with
    ``names``, those of the alerting rules of these names only, from ``GET /api/v1/rules`` with
    ``rule_name[]`` (Prometheus 2.46 on; an older one ignores the filter and the names are kept
    here): a twin evaluates just these rules to answer, the others catching up when next asked."""
    if names is None:
        r = requests.get(prometheus_url.rstrip("/") + "/api/v1/alerts", timeout=30)
        r.raise_for_status()
        alerts = r.json().get("data", {}).get("alerts", [])
    elif not names:
        return []
    else:
        alerts = [a for rule in alerting_rules(prometheus_url, names=names) for a in rule.get("alerts") or []]
    return [a for a in alerts if a.get("state") == "firing"]


def incident_alerts(prometheus_url: str, *namespaces: str) -> list[dict[str, Any]]:
    """Firing alerts of any of ``namespaces`` (a task's) or of no namespace (cluster-wide),
    without those of severity ``none``: kube-prometheus' always-firing Watchdog says the pipeline
    works, not that anything is wrong."""
    wanted = {None, *namespaces}
    return [
        a
        for a in firing_alerts(prometheus_url)
        if (a.get("labels") or {}).get("namespace") in wanted
        and (a.get("labels") or {}).get("severity") != "none"
    ]


def match_expected(
    expected: list[ExpectedAlert], firing: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    hit: list[str] = []
    miss: list[str] = []
    for e in expected:
        ok = any(
            (f.get("labels") or {}).get("alertname") == e.name
            and all((f.get("labels") or {}).get(k) == v for k, v in e.labels.items())
            for f in firing
        )
        (hit if ok else miss).append(alert_label(e))
    return hit, miss
