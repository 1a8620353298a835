"""A rule's catch-up decided by its last evaluations, where only the alerts' states are asked.

The alerts API (``AlertEngine.active``: ``/api/v1/alerts``) shows a rule's pending and firing
alerts, not its evaluations; and after the agent's turn the harness asks Prometheus only which
alerts are pending or firing (``/api/v1/alerts``, ``/api/v1/rules``): nobody reads the ``ALERTS``
series or the resolved alerts any more (``AlertEngine.ask_states_only``). A rule's catch-up over
many missed evaluations then needs only its last ones when they decide everything those answers
show. An
alert active at the end began after its last absence: a pending alert that lacks at one evaluation
is dropped, a firing one resolved, and the next presence starts a new alert with a new
``activeAt``. So when every alert of the last evaluation lacks at one of the last steps, replaying
those steps from whatever state came before gives each active alert's state, ``activeAt``,
``firedAt``, value and annotations exactly as replaying the whole catch-up does. The last steps are
``for`` / interval + 1 evaluations (all a pending alert can have behind it); an alert active through
all of them (every firing one) sends the rule back to the whole catch-up. Only the order of one
rule's alerts may differ from the whole catch-up's (Prometheus' own is a Go map's: none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set
from typing import Any

from ..runtime import StaleCacheError
from .values import LabelKey


def deciding_steps(n: int, interval_s: float, hold_s: float) -> int:
    """How many of a catch-up's ``n`` evaluations, the last ones, can decide it."""
    return min(n, math.ceil(hold_s / interval_s - 1e-9) + 1)


def active_throughout(alerts_at: Sequence[Set[LabelKey]]) -> bool:
    """Whether an alert (its labels' key) of the last of ``alerts_at`` is in every one of them."""
    if not alerts_at:
        return False
    common = set(alerts_at[-1])
    for seen in alerts_at[:-1]:
        common &= seen
        if not common:
            return False
    return bool(common)


def visible(st: Any) -> tuple[Any, ...]:
    """What the alerts and rules APIs show of a rule's state (``RuleState``): its active alerts
    with their state, times, value and annotations, its health and last evaluation."""
    active = {  # a NaN value (the only float that can be one) as a string: NaN != NaN
        fp: (a.labels, a.state, a.active_at, a.fired_at, repr(a.value), a.annotations)
        for fp, a in st.alerts.items()
        if a.state in ("pending", "firing")
    }
    return active, st.health, st.last_error, st.last_evaluation


def check_same(kept: Any, full: Any) -> None:
    """Raise :class:`StaleCacheError` where the last steps' state differs from the whole catch-up's
    (asked only with ``ITBENCH_TWIN_VERIFY_VERDICTS=1``)."""
    a, b = visible(kept), visible(full)
    if a != b:
        raise StaleCacheError(
            f"alert rule {kept.rule.alert}: its last evaluations gave {a}, the whole catch-up {b}"
        )
