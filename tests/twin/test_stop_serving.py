"""``Twin.stop_serving`` (before the harness forks a prepared twin) evaluates every alert rule up to
now once, so that no fork evaluates the same past again; a later catch-up ends as one range would."""

from __future__ import annotations

from itbench_agents.twin.clock import VirtualClock
from itbench_agents.twin.instance import Twin

START = 1_760_000_000.0


def _twin() -> Twin:
    return Twin.for_app("otel-demo", clock=VirtualClock.paused_at(START), history_s=0)


def _alerts(twin: Twin) -> list[tuple[str, str, float, str]]:
    return sorted(
        (a.name, a.state, a.active_at, repr(sorted(a.labels.items()))) for a in twin.alerts.active(twin.now())
    )


def test_stop_serving_brings_every_rule_up_to_now() -> None:
    twin = _twin()
    try:
        twin.advance(600)
        twin.alerts.firing(twin.now(), {"HighRequestErrorRate"})  # the alert wait's question alone
        behind = [st for st in twin.alerts.states if st.rule.alert != "HighRequestErrorRate"]
        assert behind and all(st.last_evaluation is None for st in behind)
        twin.stop_serving()
        now = twin.now()
        assert {st.last_evaluation for st in twin.alerts.states} == {now - now % 15}
    finally:
        twin.close()


def test_rules_evaluated_at_the_stop_end_as_if_evaluated_later() -> None:
    stopped, kept = _twin(), _twin()
    try:
        for t in (stopped, kept):
            t.advance(600)
        stopped.stop_serving()
        for t in (stopped, kept):
            t.advance(900)
        assert _alerts(stopped) == _alerts(kept)

        def history(t: Twin) -> list[str]:
            t.alerts.evaluate_until(t.now())  # as reading the ALERTS series does (active() may not)
            return sorted(repr((k, h.ts_ms, h.active_at)) for k, h in t.alerts.history.items())

        assert history(stopped) == history(kept)
    finally:
        stopped.close()
        kept.close()
