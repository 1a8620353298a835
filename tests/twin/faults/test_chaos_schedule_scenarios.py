"""Scenarios that inject a Chaos Mesh ``Schedule`` (as ITBench does): deleting only its child
experiment is no fix — the Schedule recreates it at its next tick and the alerts stay — while
deleting the Schedule is."""

from __future__ import annotations

from pathlib import Path

import pytest

from itbench_agents.scenario.registry import ScenarioRegistry

CHAOS_API = "chaos-mesh.org/v1alpha1"
SCENARIO = "sre/checkout-network-delay-v1"
SCHEDULED = [
    "sre/ad-jvm-heap-stress-v1",
    "sre/ad-jvm-return-v1",
    "sre/ad-memory-stress-v1",
    "sre/checkout-network-delay-v1",
    "sre/checkout-payment-network-loss-v1",
    "sre/email-http-body-tamper-v1",
    "sre/product-catalog-network-delay-v1",
    "sre/quote-http-abort-v1",
    "sre/shipping-quote-partition-v1",
    "sre/valkey-cart-memory-stress-v1",
]


@pytest.fixture(scope="module")
def registry() -> ScenarioRegistry:
    return ScenarioRegistry.default()


@pytest.mark.parametrize("sid", SCHEDULED)
def test_itbench_chaos_scenarios_inject_a_schedule_and_remove_it(
    registry: ScenarioRegistry, sid: str
) -> None:
    sc = registry.get(sid)
    created = [op.object for op in sc.faults if op.op == "create"]  # type: ignore[union-attr]
    assert [o["kind"] for o in created] == ["Schedule"]
    spec = created[0]["spec"]
    assert (
        spec["schedule"] == "* * * * *"
        and spec["concurrencyPolicy"] == "Forbid"
        and spec["historyLimit"] == 1
    )
    removed = [(op.target.kind, op.target.name) for op in sc.mitigation if op.op == "delete"]  # type: ignore[union-attr]
    assert removed == [("Schedule", created[0]["metadata"]["name"])]


@pytest.mark.slow
def test_deleting_only_the_child_experiment_is_no_fix(registry: ScenarioRegistry, tmp_path: Path) -> None:
    from itbench_agents.harness.twin_env import TwinEnvironment

    sc = registry.get(SCENARIO)
    env = TwinEnvironment(sc, seed=0, workdir=tmp_path / "work", history_s=600)
    try:
        env.deploy()
        env.inject()
        assert env.wait_for_alerts().ok
        assert env.api is not None
        kids = env.api.list(CHAOS_API, "NetworkChaos", sc.namespace)
        assert [k["metadata"]["labels"]["managed-by"] for k in kids] == ["checkout-delay"]
        for k in kids:
            env.api.delete(CHAOS_API, "NetworkChaos", sc.namespace, k["metadata"]["name"])
        env.settle()
        again = env.api.list(CHAOS_API, "NetworkChaos", sc.namespace)
        assert len(again) == 1 and again[0]["metadata"]["name"] != kids[0]["metadata"]["name"]
        m = env.evaluate()
        # the recreated experiment delays checkout again: the fix is not accepted (the probe fails,
        # the alert is back or on its way back)
        assert not m.passed and m.probe_ok is False, "the Schedule recreated the experiment"
        env.api.delete(CHAOS_API, "Schedule", sc.namespace, "checkout-delay")
        env.settle()
        assert env.api.list(CHAOS_API, "NetworkChaos", sc.namespace) == []
        m = env.evaluate()
        assert m.passed and not m.alerts_firing, m.reason
    finally:
        env.teardown()
