"""The alert wait skips the polls that cannot end it (``harness/alert_wait.py``): the bound from
the rules' ``for:`` and active alerts, the polls it skips, and — against a wait that polls every
time — the same verdict at the same time with the same alert state."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from itbench_agents.harness import alert_wait, twin_backend
from itbench_agents.harness.twin_env import TwinEnvironment
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.scenario.spec import ExpectedAlert
from itbench_agents.twin.clock import DEFAULT_LEAD_S, VirtualClock

T0 = 1_800_000_000.0
POLLS_TO_SKIP = alert_wait.polls_to_skip


def rule(name: str, hold: float, *alerts: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "type": "alerting", "duration": hold, "alerts": list(alerts)}


def alert(state: str, active_at: str, **labels: str) -> dict[str, Any]:
    return {"state": state, "activeAt": active_at, "labels": labels}


def iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def test_an_alert_not_pending_yet_cannot_fire_before_its_for() -> None:
    exp = [ExpectedAlert(name="MemorySpend", labels={"namespace": "shop"})]
    assert alert_wait.firing_not_before(exp, [rule("MemorySpend", 900)], T0) == T0 + 900


def test_a_pending_alert_fires_no_sooner_than_active_at_plus_for() -> None:
    exp = [ExpectedAlert(name="MemorySpend", labels={"namespace": "shop"})]
    pending = alert("pending", iso(T0 - 600), namespace="shop", alertname="MemorySpend")
    other = alert("pending", iso(T0 - 10), namespace="elsewhere", alertname="MemorySpend")
    rules = [rule("MemorySpend", 900, pending, other)]
    assert alert_wait.firing_not_before(exp, rules, T0) == T0 + 300


def test_every_expected_alert_must_fire_so_the_latest_bound_counts() -> None:
    exp = [ExpectedAlert(name="A"), ExpectedAlert(name="B")]
    assert alert_wait.firing_not_before(exp, [rule("A", 60), rule("B", 300)], T0) == T0 + 300
    # two rules of one name: the shorter `for:` bounds
    assert alert_wait.firing_not_before(exp[1:], [rule("B", 300), rule("B", 120)], T0) == T0 + 120


@pytest.mark.parametrize(
    "rules",
    [
        [],  # no rule raises it
        [rule("A", 0)],  # no `for:`
        [rule("A", 600, alert("firing", iso(T0 - 700)))],
        [rule("A", "ten minutes")],  # an answer that cannot be read
        [rule("A", 600, alert("pending", "yesterday"))],
    ],
)
def test_nothing_is_skipped_when_the_alert_could_fire_now(rules: list[dict[str, Any]]) -> None:
    assert alert_wait.firing_not_before([ExpectedAlert(name="A")], rules, T0) == T0


@pytest.mark.parametrize(
    ("ready", "left", "skip"),
    [
        (T0 + 900, 100, 14),  # polls at +60 ... +840 come before +900; the one at +900 is asked
        (T0 + 930, 100, 15),
        (T0 + 60, 100, 0),
        (T0, 100, 0),
        (T0 + 900, 5, 4),  # the last poll of the window gives the verdict
        (T0 + 900, 1, 0),
    ],
)
def test_polls_to_skip(ready: float, left: int, skip: int) -> None:
    assert alert_wait.polls_to_skip(T0, ready, 60.0, left) == skip


# --------------------------------------------------------------------------- against polling
def wait_state(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scenario_id: str, *, skip: bool
) -> tuple[tuple[list[str], list[str], float], list[Any], int]:
    """The wait's verdict, the alert engine's state after it (times relative to the twin's start),
    and how many polls were skipped."""
    scenario = ScenarioRegistry.default().get(scenario_id)
    skipped: list[int] = []

    def counted(*a: Any) -> int:
        n = POLLS_TO_SKIP(*a)
        skipped.append(n)
        return n if skip else 0

    monkeypatch.setattr(alert_wait, "polls_to_skip", counted)
    env = TwinEnvironment(scenario, seed=0, workdir=tmp_path / ("skip" if skip else "poll"))
    try:
        env.deploy()
        env.inject()
        check = env.wait_for_alerts()
        state = [
            (
                st.rule.alert,
                st.health,
                st.last_evaluation,
                sorted(
                    (str(fp), a.state, a.active_at, a.fired_at, a.resolved_at, a.value)
                    for fp, a in st.alerts.items()
                ),
            )
            for st in env.twin.alerts.states
        ]
        history = sorted((str(k), h.ts_ms, h.active_at) for k, h in env.twin.alerts.history.items())
        return (check.firing, check.missing, check.elapsed_s), [state, history], sum(skipped)
    finally:
        env.teardown()


@pytest.fixture
def fixed_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both twins of a comparison on one timeline (the harness's follows the wall-clock minute)."""
    anchor = math.floor(time.time() / 60.0) * 60.0

    def clock(history_s: float, grid_s: float = 60.0) -> VirtualClock:
        return VirtualClock.paused_at(math.floor((anchor - history_s - DEFAULT_LEAD_S) / grid_s) * grid_s)

    monkeypatch.setattr(twin_backend, "harness_clock", clock)


def compare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scenario_id: str) -> None:
    polled, polled_state, _ = wait_state(monkeypatch, tmp_path, scenario_id, skip=False)
    skipped, skipped_state, n = wait_state(monkeypatch, tmp_path, scenario_id, skip=True)
    assert n > 0, "the bound skipped no poll: nothing compared"
    assert polled[0] and not polled[1], f"the expected alerts did not fire: {polled}"
    assert skipped == polled
    assert skipped_state == polled_state


@pytest.mark.usefixtures("fixed_epoch")
def test_an_sre_wait_ends_as_when_it_polls_every_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    compare(monkeypatch, tmp_path, "sre/ad-cart-nonexistent-node-selector-v1")


@pytest.mark.slow
@pytest.mark.usefixtures("fixed_epoch")
def test_a_finops_wait_ends_as_when_it_polls_every_minute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    compare(monkeypatch, tmp_path, "finops/ad-idle-replicas-v1")
