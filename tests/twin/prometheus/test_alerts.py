"""Alert rules evaluated on a virtual timeline: for-durations, state machine, templating, rule files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from itbench_agents.paths import scenarios_dir
from itbench_agents.twin.prometheus.alerts import (
    AlertEngine,
    RuleFileError,
    RuleGroup,
    expand_template,
    install_alerts,
    load_rule_file,
    load_rules,
)
from itbench_dev.prometheus.synthetic import Scenario, generate

SC = Scenario()
T0 = SC.start_s
EXPR_ERRORS = 'sum(rate(traces_span_metrics_calls_total{status_code="STATUS_CODE_ERROR"}[2m])) > 0'


@pytest.fixture(scope="module")
def source() -> Any:
    return generate(SC)


def _engine(source: Any) -> AlertEngine:
    return AlertEngine(lambda: source, load_rules(scenarios_dir() / "rules"), start=T0)


def _state(engine: AlertEngine, now: float, name: str, **labels: str) -> str:
    engine.evaluate_until(now)
    for st in engine.states:
        for a in st.alerts.values():
            if a.name == name and all(a.labels.get(k) == v for k, v in labels.items()):
                return a.state
    return "absent"


def test_error_burst_goes_pending_firing_resolved(source: Any) -> None:
    e = _engine(source)
    burst, end = T0 + SC.error_from_s, T0 + SC.error_to_s
    assert _state(e, burst - 60, "HighRequestErrorRate", service_name="payment") == "absent"
    assert _state(e, burst + 30, "HighRequestErrorRate", service_name="payment") == "pending"  # for: 1m
    assert _state(e, burst + 90, "HighRequestErrorRate", service_name="payment") == "firing"
    assert "HighRequestErrorRate" in e.firing_names(burst + 90)
    # only the faulty service alerts
    assert {a.labels["service_name"] for a in e.firing(burst + 90) if a.name == "HighRequestErrorRate"} == {
        "payment"
    }
    assert "HighRequestLatency" in e.firing_names(burst + 150)
    # the 2m rate window empties after the burst: resolved, kept 15 min for Alertmanager, then dropped
    assert _state(e, end + 180, "HighRequestErrorRate", service_name="payment") == "inactive"
    assert any(a.name == "HighRequestErrorRate" for a in e.resolved(end + 180))
    assert "HighRequestErrorRate" not in e.firing_names(end + 180)
    assert _state(e, end + 180 + 16 * 60, "HighRequestErrorRate", service_name="payment") == "absent"


def test_pending_pod_alert_waits_for_two_minutes(source: Any) -> None:
    e = _engine(source)
    t = T0 + SC.pending_from_s
    pod = SC.pending_pod
    assert _state(e, t + 60, "PendingPodsDetected", pod=pod) == "pending"
    assert _state(e, t + 110, "PendingPodsDetected", pod=pod) == "pending"
    assert _state(e, t + 140, "PendingPodsDetected", pod=pod) == "firing"
    alert = next(a for a in e.firing(t + 140) if a.name == "PendingPodsDetected")
    assert alert.labels["service_name"] == "checkout" and alert.labels["namespace"] == "otel-demo"
    assert alert.annotations["summary"] == f"Pending pod {pod}"
    assert _state(e, T0 + SC.pending_to_s + 30, "PendingPodsDetected", pod=pod) == "inactive"


def test_evaluation_is_deterministic_whatever_the_request_pattern(source: Any) -> None:
    t = T0 + SC.error_from_s + 200
    jump = _engine(source)
    jump.evaluate_until(t)
    steps = _engine(source)
    now = T0 + SC.error_from_s - 400
    steps.evaluate_until(now)
    while now < t:
        now += 7.3  # uneven polling
        steps.evaluate_until(min(now, t))

    def snap(e: AlertEngine) -> list[tuple[str, str, float, str]]:
        return sorted((a.name, a.state, a.active_at, repr(sorted(a.labels.items()))) for a in e.active(t))

    assert snap(jump) == snap(steps)
    assert all(a.active_at % 15 == 0 for a in jump.active(t))  # evaluation timestamps: multiples of 15 s


def test_evaluating_some_rules_first_leaves_the_others_as_if_evaluated_at_once(source: Any) -> None:
    """``firing(now, names)`` evaluates only those rules (the FinOps canary asks for its cost alerts
    alone); the others catch up when next asked and end exactly as if never left behind."""
    t = T0 + SC.error_from_s + 200
    whole = _engine(source)
    some = _engine(source)
    assert {a.name for a in some.firing(t, {"HighRequestErrorRate"})} == {"HighRequestErrorRate"}
    assert all(st.last_evaluation is None for st in some.states if st.rule.alert != "HighRequestErrorRate")

    def snap(e: AlertEngine) -> list[tuple[str, str, float, float, str]]:
        return sorted(
            (a.name, a.state, a.active_at, a.value, repr(sorted(a.labels.items()))) for a in e.active(t)
        )

    assert snap(some) == snap(whole)
    assert {"HighRequestLatency", "HighRequestErrorRate"} <= whole.firing_names(t + 60)


def _snap(e: AlertEngine, t: float) -> list[tuple[str, str, float, float, str]]:
    """Every active alert at ``t`` and every ``ALERTS`` sample kept: what evaluation left behind
    (caught up to ``t``, as reading the ``ALERTS`` series does: the active alerts alone may come
    from a rule's last steps)."""
    e.evaluate_until(t)
    active = sorted(
        (a.name, a.state, a.active_at, a.value, repr(sorted(a.labels.items()))) for a in e.active(t)
    )
    history = sorted((repr(k), 0.0, 0.0, 0.0, repr((h.ts_ms, h.active_at))) for k, h in e.history.items())
    return active + history


def test_rules_by_name_evaluate_those_rules_only(source: Any) -> None:
    """``rules(now, names)`` (``/api/v1/rules?rule_name[]=``, what the alert wait asks) evaluates
    and answers those rules alone; the others catch up when next asked, as if never left behind."""
    t = T0 + SC.error_from_s + 200
    whole, some = _engine(source), _engine(source)
    groups = some.rules(t, {"HighRequestErrorRate"})
    assert [r["name"] for g in groups for r in g["rules"]] == ["HighRequestErrorRate"]
    assert groups[0]["rules"][0]["state"] == "firing"
    assert all(st.last_evaluation is None for st in some.states if st.rule.alert != "HighRequestErrorRate")
    assert _snap(some, t) == _snap(whole, t)


def test_reloading_a_rule_file_leaves_the_other_files_rules_to_catch_up(source: Any) -> None:
    """A rule file's reload (a PrometheusRule changed) evaluates that file's rules up to the reload
    under their old expressions, not every file's; the others end as when evaluated first."""
    t1, t2 = T0 + SC.error_from_s - 300, T0 + SC.error_from_s + 400
    team = [
        RuleGroup.model_validate(
            {"name": "team", "rules": [{"alert": "PaymentErrors", "expr": EXPR_ERRORS, "for": "1m"}]}
        )
    ]
    eager, lazy = _engine(source), _engine(source)
    for e in (eager, lazy):
        e.replace_file("team.yaml", team, T0 + 60)
    eager.evaluate_until(t1)  # what a reload did before: everything evaluated up to it
    for e in (eager, lazy):
        e.replace_file("team.yaml", [g.model_copy(update={"interval": "15s"}) for g in team], t1)
    assert all(st.last_evaluation is None for st in lazy.states if st.file != "team.yaml")
    assert next(st for st in lazy.states if st.file == "team.yaml").last_evaluation == t1 - t1 % 15
    assert "PaymentErrors" in eager.firing_names(t2)
    assert _snap(lazy, t2) == _snap(eager, t2)


def test_quiet_rules_stay_quiet(source: Any) -> None:
    e = _engine(source)
    names = e.firing_names(T0 + SC.duration_s)
    assert "KafkaConsumerGroupInactive" not in names
    assert "NoRequestsReceived" not in names
    assert "FailedPodsDetected" not in names
    assert "HighKafkaConsumerLag" in names  # accounting lag grows past 100


def test_rules_api_shape(source: Any) -> None:
    e = _engine(source)
    groups = e.rules(T0 + SC.error_from_s + 120)
    rule = next(r for g in groups for r in g["rules"] if r["name"] == "HighRequestErrorRate")
    assert rule["duration"] == 60 and rule["state"] == "firing" and rule["type"] == "alerting"
    assert rule["alerts"][0]["labels"]["alertname"] == "HighRequestErrorRate"


def test_templating() -> None:
    out = expand_template(
        '{{ $labels.service_name }} at {{ $value }} ({{ $value | humanize }}, {{ printf "%.1f" $value }})',
        {"service_name": "cart"},
        1234.5,
    )
    assert out == "cart at 1234.5 (1.234k, 1234.5)"
    assert expand_template("{{ $labels.missing }}x", {}, 1.0) == "x"


def test_rule_file_errors_name_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n- name: g\n  rules:\n  - alert: X\n    expr: sum(rate(x[5m])\n    for: 1m\n")
    with pytest.raises(RuleFileError) as exc:
        load_rule_file(bad)
    msg = str(exc.value)
    assert str(bad) in msg and "expr" in msg and "groups.0.rules.0" in msg
    bad.write_text("groups:\n- name: g\n  rules:\n  - alert: X\n    expr: up\n    for: soon\n")
    with pytest.raises(RuleFileError, match="for"):
        load_rule_file(bad)


def test_install_alerts_on_a_twin_like_object(source: Any) -> None:
    import threading

    class T:
        metrics = source
        lock = threading.RLock()
        created_at = T0
        alerts: Any = None

    t = T()
    eng = install_alerts(t)
    assert t.alerts is eng
    assert "HighRequestErrorRate" in eng.firing_names(T0 + SC.error_from_s + 120)
