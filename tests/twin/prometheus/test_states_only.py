"""Once only the alerts' states are asked (``AlertEngine.ask_states_only``, the harness after the
agent's turn), a rule's catch-up runs over its last evaluations where they decide it: the alerts
and rules APIs answer exactly as after the whole catch-up, with fewer evaluations."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from itbench_agents.paths import scenarios_dir
from itbench_agents.twin.prometheus.alerts import AlertEngine, alert_json, load_rules
from itbench_agents.twin.prometheus.engine import Engine
from itbench_agents.twin.prometheus.states_only import (
    active_throughout,
    check_same,
    deciding_steps,
)
from itbench_agents.twin.prometheus.values import PromQLError
from itbench_agents.twin.runtime import StaleCacheError
from itbench_dev.prometheus.synthetic import Scenario, generate

SC = Scenario()
T0 = SC.start_s
BURST, BURST_END = T0 + SC.error_from_s, T0 + SC.error_to_s


@pytest.fixture(scope="module")
def source() -> Any:
    return generate(SC)


def _engine(source: Any) -> AlertEngine:
    return AlertEngine(lambda: source, load_rules(scenarios_dir() / "rules"), start=T0)


def _answers(e: AlertEngine, t: float) -> tuple[Any, Any]:
    """What ``/api/v1/alerts`` and ``/api/v1/rules`` would answer at ``t``."""
    alerts = sorted((alert_json(a) for a in e.active(t)), key=repr)
    return alerts, e.rules(t)


@pytest.mark.parametrize(
    "asks",
    [
        [BURST + 30],  # the error alert pending: its run began inside the last steps
        [BURST + 90, BURST + 150],  # firing: active through them, the whole catch-up
        [BURST_END + 180],  # resolved: nothing active
        [BURST - 600, BURST_END + 16 * 60, T0 + SC.duration_s],
        [T0 + SC.pending_from_s + 60, T0 + SC.pending_from_s + 140, T0 + SC.pending_to_s + 30],
    ],
)
def test_the_answers_are_the_whole_catch_ups(source: Any, asks: list[float]) -> None:
    """With ``ITBENCH_TWIN_VERIFY_VERDICTS=1`` (the suite's) each catch-up decided by its last
    steps is also checked against the whole catch-up, rule by rule; here the API answers."""
    whole, last = _engine(source), _engine(source)
    for e in (whole, last):
        e.evaluate_until(T0 + 600)
    last.ask_states_only()
    for t in asks:
        assert _answers(last, t) == _answers(whole, t)
    assert any(_answers(whole, t)[0] for t in asks)  # something active to compare


def _steps(e: AlertEngine) -> list[int]:
    """Count the evaluations the engine's range queries cover (one entry per query)."""
    counted: list[int] = []
    results = e._results

    def counting(engine: Engine, st: Any, first: float, last: float, skip: int = 0) -> Any:
        out = results(engine, st, first, last, skip)
        counted.append(len(out))
        return out

    e._results = counting  # type: ignore[method-assign]
    return counted


def test_a_quiet_end_takes_the_last_steps_only(source: Any) -> None:
    """After the error burst has resolved, the payment alerts' rules catch up over their last
    ``for`` / interval + 1 evaluations; an always-active rule (Watchdog) over all of them."""
    t = BURST_END + 20 * 60
    last = _engine(source)
    last.evaluate_until(T0 + 600)
    last.ask_states_only()
    last._verify = False  # count this engine's own evaluations only
    counted = _steps(last)
    last.evaluate_until(t)
    n = int((t - t % 15 - (T0 + 600 - (T0 + 600) % 15)) / 15)
    by_rule = dict(zip([st.rule.alert for st in last.states], counted, strict=False))
    assert len(counted) > len(last.states)  # Watchdog (and the firing Kafka lag) also ran the rest
    assert by_rule["Watchdog"] == 1  # vector(1), for 0s: active through its one last step
    assert deciding_steps(n, 15.0, 60.0) == 5
    assert sum(counted) < len(last.states) * n / 2


def test_alerts_history_is_refused_once_only_states_are_asked(source: Any) -> None:
    e = _engine(source)
    e.evaluate_until(BURST + 120)
    assert e.history  # ALERTS samples written
    e.ask_states_only()
    with pytest.raises(PromQLError, match="ALERTS series are not written"):
        Engine(_alerts_source(e)).instant("ALERTS", int((BURST + 200) * 1000))
    with pytest.raises(RuntimeError, match="resolved alerts"):
        e.resolved(BURST + 200)


def _alerts_source(e: AlertEngine) -> Any:
    from itbench_agents.twin.prometheus.alerts import AlertSeriesSource

    return AlertSeriesSource(e, lambda: BURST + 200)


def test_active_throughout_reads_alert_keys() -> None:
    a, b = (("alertname", "X"),), (("alertname", "Y"),)
    assert active_throughout([{a}, {a, b}, {a}])
    assert not active_throughout([{a}, {b}, {a}])
    assert not active_throughout([{a, b}, {a, b}, set()])
    assert not active_throughout([])
    assert deciding_steps(3, 15.0, 300.0) == 3  # the whole catch-up
    assert deciding_steps(100, 60.0, 900.0) == 16


def test_the_check_catches_a_different_answer(source: Any) -> None:
    e = _engine(source)
    e.evaluate_until(BURST + 120)
    st = next(s for s in e.states if s.rule.alert == "HighRequestErrorRate")
    other = copy.deepcopy(st)
    check_same(st, other)
    next(iter(other.alerts.values())).active_at -= 15
    with pytest.raises(StaleCacheError, match="HighRequestErrorRate"):
        check_same(st, other)


def test_asking_for_the_alerts_leaves_no_trace(source: Any) -> None:
    """``active`` (``/api/v1/alerts``) answers a rule from its last steps where they decide it,
    without catching the rule up: the answers are a caught-up engine's, and the ``ALERTS``
    history, once caught up, that of an engine never asked."""
    asked, never = _engine(source), _engine(source)
    for t in (BURST - 600, BURST + 30, BURST + 95, BURST_END + 180):
        ref = _engine(source)
        ref.evaluate_until(t)
        expected = sorted(
            (alert_json(a) for st in ref.states for a in st.alerts.values() if not a.resolved), key=repr
        )
        assert sorted((alert_json(a) for a in asked.active(t)), key=repr) == expected
        assert sorted((alert_json(a) for a in asked.active(t)), key=repr) == expected  # asked again: kept
    assert any(st.last_evaluation is None for st in asked.states)  # some rules never caught up
    end = T0 + SC.duration_s
    for e in (asked, never):
        e.evaluate_until(end)

    def history(e: AlertEngine) -> list[tuple[Any, ...]]:
        return sorted(
            (k, tuple(h.ts_ms), tuple(h.active_at)) for k, h in [*e.history.items(), *e.for_state.items()]
        )

    assert history(asked) == history(never) and history(never)
