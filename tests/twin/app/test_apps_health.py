"""Each shipped app comes up healthy, its probe passes, and health follows the call graph."""

from __future__ import annotations

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.app.behaviour import BehaviourModel
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.faults.chaos import CHAOS_GRS
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.store import clone
from itbench_agents.twin.runtime import ContainerRuntime

T0 = 1_750_000_000.0
DEPLOY = GroupResource("apps", "deployments")
PODS = GroupResource("", "pods")


@pytest.mark.parametrize("app", ["chain", "hotel-reservation"])
def test_app_comes_up_healthy(app: str) -> None:
    tw = Twin.for_app(app, clock=ManualClock(T0), history_s=0)
    tw.advance(300)
    snap = tw.health.at(tw.now())
    assert snap is not None and snap.namespace == tw.app.namespace
    for name, sh in snap.services.items():
        if not tw.app.behaviour.services[name].external:
            assert sh.ready_pods == sh.desired_pods == 1, name
        assert all(op.error_ratio == 0 for op in sh.operations), name
    assert tw.behaviour.probe().ok
    entry = tw.app.behaviour.load.calls[0]
    assert snap.services[entry.to].operations[0].rate > 0


def test_astronomy_shop_with_an_hour_of_history() -> None:
    tw = Twin.for_app("otel-demo", seed=3)  # default: VirtualClock, 1 h pre-history
    try:
        assert isinstance(tw.behaviour, BehaviourModel) and isinstance(tw.runtime, ContainerRuntime)
        assert tw.behaviour.probe().ok
        first = tw.health.at(tw.created_at + 600)
        now = tw.health.at(tw.now())
        assert first is not None and now is not None
        assert all(
            sh.healthy for sh in now.services.values() if sh.operations and any(o.rate for o in sh.operations)
        )
        assert tw.now() - tw.created_at >= 3600
        rates = {s: sum(o.rate for o in sh.operations) for s, sh in now.services.items()}
        assert rates["frontend-proxy"] == pytest.approx(8.08, rel=0.01)
        assert rates["payment"] == pytest.approx(0.55) and rates["email"] == pytest.approx(0.55)
        assert rates["accounting"] == pytest.approx(0.55) and rates["fraud-detection"] == pytest.approx(0.55)
    finally:
        tw.close()


def test_rates_fan_out_and_latency_adds_up_the_path() -> None:
    tw = Twin.for_app("chain", clock=ManualClock(T0), history_s=0)
    tw.advance(120)
    snap = tw.health.at(tw.now())
    op = {s: sh.operations[0] for s, sh in snap.services.items() if sh.operations}
    assert op["a"].rate == 5 and op["b"].rate == 5 and op["c"].rate == 10, "b calls c twice per request"
    assert op["b"].latency_ms == pytest.approx(3 + 2 * 2)
    assert op["a"].latency_ms == pytest.approx(4 + op["b"].latency_ms)
    edge = next(e for e in snap.edges if (e.caller, e.callee) == ("b", "c"))
    assert edge.rate == 10 and edge.error_ratio == 0


def test_partial_failure_propagates_with_fan_out() -> None:
    """Half of c's pods abort requests: each of b's two calls fails with p=0.5, so b fails 75 %."""
    tw = Twin.for_app("chain", clock=ManualClock(T0), history_s=0)
    tw.advance(60)
    with tw.lock:
        d = clone(tw.store.get(DEPLOY, "chain", "c"))
        d["spec"]["replicas"] = 2
        tw.store.update(DEPLOY, d)
    tw.advance(60)
    c_pods = sorted(
        p["metadata"]["name"] for p in tw.store.list(PODS, "chain") if p["metadata"]["name"].startswith("c-")
    )
    with tw.lock:
        tw.store.create(
            CHAOS_GRS["HTTPChaos"],
            {
                "apiVersion": "chaos-mesh.org/v1alpha1",
                "kind": "HTTPChaos",
                "metadata": {"name": "abort-one", "namespace": "chain"},
                "spec": {
                    "mode": "one",
                    "selector": {"pods": {"chain": [c_pods[0]]}},
                    "target": "Request",
                    "abort": True,
                },
            },
        )
    tw.advance(10)
    snap = tw.health.at(tw.now())
    b = snap.services["b"].operations[0]
    a = snap.services["a"].operations[0]
    assert b.error_ratio == pytest.approx(0.75)
    assert a.error_ratio == pytest.approx(0.75)
    assert snap.services["c"].operations[0].rate == pytest.approx(5.0), "aborted calls never reach c"
    assert not tw.behaviour.probe().ok


def test_same_seed_same_health() -> None:
    def run() -> list:
        tw = Twin.for_app("chain", seed=7, clock=ManualClock(T0), history_s=0)
        tw.advance(90)
        with tw.lock:
            d = clone(tw.store.get(DEPLOY, "chain", "b"))
            d["spec"]["replicas"] = 0
            tw.store.update(DEPLOY, d)
        tw.advance(60)
        return [(s.since, s.services, s.edges) for s in tw.health.between(T0, tw.now())]

    assert run() == run()


def test_runtime_verdicts_and_usage() -> None:
    tw = Twin.for_app("chain", clock=ManualClock(T0), history_s=0)
    tw.advance(60)
    pod = next(p for p in tw.store.list(PODS, "chain") if p["metadata"]["name"].startswith("b-"))
    ct = pod["spec"]["containers"][0]
    v = tw.runtime.verdict(pod, ct, init=False, node=None, now=tw.now())
    assert v.pull_error is None and v.ready and v.exit_after_s is None
    bad = {**ct, "image": "registry.local/chain/b:nope"}
    v = tw.runtime.verdict(pod, bad, init=False, node=None, now=tw.now())
    assert v.pull_error is not None
    assert 'Failed to pull image "registry.local/chain/b:nope": rpc error: code = NotFound' in v.pull_error
    u = tw.runtime.usage(pod, ct, tw.now())
    assert 0 < u.cpu_cores <= 0.2 and u.memory_bytes == 40 * 2**20
