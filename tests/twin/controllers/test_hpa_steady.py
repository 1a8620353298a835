"""A steady HPA is not computed again (``controllers/hpa.py``): while neither the store nor the
runtime's usage stamp changes, a sync that wrote nothing and recommended the current size is only
noted. The cluster must come out exactly as when every sync is computed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ctl_helpers import DEPLOYMENTS, ScriptedRuntime, condition, deployment, hpa

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.controllers.hpa import HorizontalPodAutoscalerController
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.runtime import VERIFY_ENV, ResourceUsage, StaleCacheError
from itbench_agents.twin.scheduler import Scheduler

HPAS = GroupResource("autoscaling", "horizontalpodautoscalers")
LEASES = GroupResource("coordination.k8s.io", "leases")
HOUR = 3600.0
PHASE_S = 2950.0


class CountingRuntime(ScriptedRuntime):
    """A demand of CPU cores for container ``api``, shared by the replicas its Deployment asks for
    (more pods, less each); counts the usage asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.twin: Twin | None = None
        self.demand = 0.0
        self.usage_calls = 0

    def set_demand(self, cores: float) -> None:
        self.demand = cores

    def usage(self, pod, container, now):  # type: ignore[no-untyped-def]
        self.usage_calls += 1
        assert self.twin is not None
        replicas = self.twin.store.get(DEPLOYMENTS, "default", "api")["spec"]["replicas"]
        return ResourceUsage(self.demand / max(1, replicas), 1e8)


class StampedRuntime(CountingRuntime):
    """...with a usage stamp that changes with each setting (as the behaviour model's does at a
    recompute); a ``lying`` one never changes it."""

    def __init__(self, lying: bool = False) -> None:
        super().__init__()
        self.gen = 0
        self.lying = lying

    def set_demand(self, cores: float) -> None:
        super().set_demand(cores)
        self.gen += 0 if self.lying else 1

    def usage_stamp(self) -> int:
        return self.gen


def _quiet_twin(runtime: CountingRuntime) -> Twin:
    twin = runtime.twin = Twin(seed=0, clock=ManualClock(), runtime=runtime)
    twin.quiet_until = twin.now() + 24 * HOUR  # sparse heartbeats, as in a FinOps week's past
    return twin


def _surge_and_calm(twin: Twin, runtime: CountingRuntime) -> list[int]:
    """A steady phase at the target, a surge (scale up), a calm (scale down once the 300 s window
    has passed, held at the minimum of 2 while recommending 1), each then steady; the target's
    replicas after each. With 100m requests and a 50 % target the HPA wants demand / 0.05 replicas. Phases of 2,950 s: the demand changes while the
    store is quiet (the nodes renew their Leases every 600 s at :10, hour-old events expire inside a
    phase), so the first sync after a change would be a skipped one."""
    twin.store.create(DEPLOYMENTS, deployment("api", replicas=2, container="api", requests={"cpu": "100m"}))
    runtime.set_demand(0.1)
    twin.store.create(HPAS, hpa("api", min_r=2, max_r=6, util=50))
    sizes = []
    for demand in (None, 0.2, 0.02):
        if demand is not None:
            runtime.set_demand(demand)
        twin.advance(PHASE_S, step=60)
        sizes.append(twin.store.get(DEPLOYMENTS, "default", "api")["spec"]["replicas"])
    return sizes


def _log(twin: Twin) -> list[tuple]:
    return [(ev.rv, ev.type, ev.gr, ev.obj, ev.time) for ev in twin.store.log]


def test_a_steady_hpa_is_only_noted_and_the_cluster_ends_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VERIFY_ENV, "0")  # no check: the skipped syncs really are skipped
    every, steady = CountingRuntime(), StampedRuntime()
    a, b = _quiet_twin(every), _quiet_twin(steady)
    assert _surge_and_calm(a, every) == [2, 4, 2]
    assert _surge_and_calm(b, steady) == [2, 4, 2]
    assert _log(b) == _log(a)
    hpa_a = a.store.get(HPAS, "default", "api")
    assert hpa_a["status"]["desiredReplicas"] == 2
    assert condition(hpa_a, "ScalingLimited")["reason"] == "TooFewReplicas"  # held at its minimum
    assert every.usage_calls > 5 * steady.usage_calls, (every.usage_calls, steady.usage_calls)


def test_heartbeats_do_not_end_a_steady_stretch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lease renewals every 10 s (an awake cluster) change nothing a sync reads
    (``Index.significant_rv``): the HPA stays steady through them, and the cluster ends the same."""
    monkeypatch.setenv(VERIFY_ENV, "0")
    every, steady = CountingRuntime(), StampedRuntime()
    twins = []
    for runtime in (every, steady):
        twin = runtime.twin = Twin(seed=0, clock=ManualClock(), runtime=runtime)
        twin.store.create(
            DEPLOYMENTS, deployment("api", replicas=2, container="api", requests={"cpu": "100m"})
        )
        runtime.set_demand(0.1)
        twin.store.create(HPAS, hpa("api", min_r=2, max_r=6, util=50))
        twin.advance(HOUR, step=60)
        twins.append(twin)
    a, b = twins
    assert _log(b) == _log(a)
    renewals = sum(1 for ev in b.store.log if ev.gr == LEASES and ev.type == "MODIFIED")
    assert renewals > 300, renewals
    assert every.usage_calls > 20 * steady.usage_calls, (every.usage_calls, steady.usage_calls)


def test_a_stamp_that_hides_a_usage_change_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the tests' check on, a skipped sync that would have found something else raises: a
    runtime that does not change its stamp when usage changes is caught, not trusted."""
    monkeypatch.setenv(VERIFY_ENV, "1")
    runtime = StampedRuntime(lying=True)
    twin = _quiet_twin(runtime)
    with pytest.raises(StaleCacheError, match="HPA default/api kept as steady is not"):
        _surge_and_calm(twin, runtime)


def test_the_check_passes_an_honest_stamp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VERIFY_ENV, "1")
    runtime = StampedRuntime()
    assert _surge_and_calm(_quiet_twin(runtime), runtime) == [2, 4, 2]


def _hpa_controller(twin: Twin) -> HorizontalPodAutoscalerController:
    return next(
        c
        for c in twin.controllers.controllers  # type: ignore[attr-defined]
        if isinstance(c, HorizontalPodAutoscalerController)
    )


def test_steady_syncs_with_nothing_between_them_are_done_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The syncs a steady one stands for (nothing else due before them, within the same run) are
    noted by it, not each run from its own timer: the cluster, and the recommendations the
    stabilisation windows will read, come out exactly as when each sync runs apart."""
    monkeypatch.setenv(VERIFY_ENV, "0")
    apart, together = StampedRuntime(), StampedRuntime()
    a, b = _quiet_twin(apart), _quiet_twin(together)
    syncs = {id(a): 0, id(b): 0}
    real_sync = HorizontalPodAutoscalerController.sync

    def counting_sync(self: HorizontalPodAutoscalerController, key: tuple[str, str]) -> None:
        syncs[id(self.twin)] += 1
        real_sync(self, key)

    monkeypatch.setattr(HorizontalPodAutoscalerController, "sync", counting_sync)
    monkeypatch.setattr(_hpa_controller(a), "_steady_run", lambda now: [now])  # one timer per sync
    assert _surge_and_calm(a, apart) == [2, 4, 2]
    assert _surge_and_calm(b, together) == [2, 4, 2]
    assert _log(b) == _log(a)
    assert _hpa_controller(b)._recs == _hpa_controller(a)._recs
    assert syncs[id(a)] > 3 * syncs[id(b)], syncs  # hops of 60 s: up to 4 syncs a timer


def test_a_callback_due_before_the_next_sync_ends_the_run_of_steady_syncs() -> None:
    """Only the syncs due before the scheduler's next callback (strictly: one due at the same
    time was scheduled first, so it runs first) and not past the running ``run_until`` are done
    at once; outside a run, none."""
    clock = ManualClock()
    sched = Scheduler(clock)
    ctl = HorizontalPodAutoscalerController(SimpleNamespace(store=None, scheduler=sched), index=None)
    t0 = clock.now()
    assert ctl._steady_run(t0) == [t0]  # not inside run_until: the API may write next
    seen: list[list[float]] = []
    sched.at(t0 + 46.0, lambda: None)  # due with the fourth sync, and scheduled before it
    sched.at(t0 + 1.0, lambda: seen.append(ctl._steady_run(t0 + 1.0)))
    sched.run_until(t0 + 100.0)
    assert seen == [[t0 + 1.0, t0 + 16.0, t0 + 31.0]]
    sched.at(t0 + 101.0, lambda: seen.append(ctl._steady_run(t0 + 101.0)))
    sched.run_until(t0 + 140.0)
    assert seen[-1] == [t0 + 101.0, t0 + 116.0, t0 + 131.0]  # t0 + 146 is past this run
    assert sched.horizon() is None
