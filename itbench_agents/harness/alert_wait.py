"""How long the alert wait can go without looking: the earliest time every expected alert could be
firing, from Prometheus' own rules (``GET /api/v1/rules``: each alerting rule's ``duration``, its
``for:``, and its active alerts' ``activeAt``).

An alert fires at the first evaluation at least ``for:`` after it became pending, so an expected
alert that is not pending yet cannot fire before ``now + for:``, and one pending since ``activeAt``
not before ``activeAt + for:``. The wait needs every expected alert firing at once, so no poll
before the latest of those times can end it: :func:`polls_to_skip` says how many polls of the
wait's grid can go unasked — the time the wait ends, and what it sees then, are the same.

Only the public Prometheus API is used: on a live cluster this skips requests; on the twin it skips
rule evaluations one at a time, the rules catching up over the skipped minutes in one range
evaluation (the same answers, a fraction of the work: a FinOps cost alert holds for 30 minutes).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any

import requests

from ..scenario.spec import ExpectedAlert


def alerting_rules(
    prometheus_url: str, timeout_s: float = 30.0, names: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """Every alerting rule of ``GET /api/v1/rules?type=alert`` (Prometheus' wire format); with
    ``names``, those named so only (``rule_name[]``, kept here too for a Prometheus before 2.46)."""
    params: list[tuple[str, str]] = [("type", "alert")]
    if names is not None:
        params += [("rule_name[]", n) for n in sorted(set(names))]
    r = requests.get(prometheus_url.rstrip("/") + "/api/v1/rules", params=params, timeout=timeout_s)
    r.raise_for_status()
    groups = (r.json().get("data") or {}).get("groups") or []
    return [
        rule
        for g in groups
        for rule in g.get("rules") or []
        if rule.get("type", "alerting") == "alerting" and (names is None or rule.get("name") in names)
    ]


def _labels_match(want: Mapping[str, str], labels: Mapping[str, Any]) -> bool:
    return all(labels.get(k) == v for k, v in want.items())


def _timestamp(s: str) -> float | None:
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return None


def firing_not_before(expected: Iterable[ExpectedAlert], rules: list[dict[str, Any]], now: float) -> float:
    """A lower bound on when every alert of ``expected`` can be firing together; ``now`` when any
    could fire at once (a rule with no ``for:``, one already firing, an expected alert no rule
    raises, an answer that cannot be read)."""
    latest = now
    for e in expected:
        named = [r for r in rules if r.get("name") == e.name]
        if not named:
            return now  # not a rule this server evaluates: nothing to reason about
        earliest = math.inf
        for r in named:
            try:
                hold = float(r.get("duration") or 0.0)
            except (TypeError, ValueError):
                return now
            earliest = min(earliest, now + hold)
            for a in r.get("alerts") or []:
                if not _labels_match(e.labels, a.get("labels") or {}):
                    continue
                active = _timestamp(str(a.get("activeAt", "")))
                if active is None or a.get("state") == "firing":
                    return now
                earliest = min(earliest, active + hold)
        latest = max(latest, earliest)
    return latest


def polls_to_skip(now: float, ready: float, poll_s: float, polls_left: int) -> int:
    """How many of the next ``polls_left`` polls (at ``now + k * poll_s``, k = 1, 2, ...) come
    strictly before ``ready``; the last poll is never skipped (its answer is the wait's verdict)."""
    if poll_s <= 0 or ready <= now or polls_left <= 1:
        return 0
    before = math.ceil((ready - now) / poll_s) - 1
    return max(0, min(before, polls_left - 1))
