"""The twin's core parts: clock, scheduler, object store."""

import time

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.clock import ManualClock, VirtualClock
from itbench_agents.twin.kube.errors import ApiError
from itbench_agents.twin.kube.store import ObjectStore, clone
from itbench_agents.twin.scheduler import Scheduler

PODS = GroupResource("", "pods")


def test_virtual_clock_follows_wall_and_advances():
    wall = [1000.0]
    c = VirtualClock(wall=lambda: wall[0])
    assert c.now() == 1000.0
    wall[0] = 1001.0
    assert c.now() == 1001.0
    c.advance(60)
    assert c.now() == 1061.0
    with pytest.raises(ValueError):
        c.advance(-1)


def test_a_paused_virtual_clock_moves_only_when_advanced_and_resumes_from_there():
    wall = [1000.0]
    c = VirtualClock.paused_at(500.0, wall=lambda: wall[0])
    assert c.paused and c.now() == 500.0
    wall[0] = 1010.0
    assert c.now() == 500.0  # wall time passing does not move it
    c.advance(60)
    assert c.now() == 560.0
    c.resume()
    wall[0] = 1015.0
    assert not c.paused and c.now() == 565.0 and c.lag() == 450.0
    c.pause()
    wall[0] = 2000.0
    assert c.now() == 565.0


def test_an_episode_twin_is_paused_outside_the_agents_turn(tmp_path):
    """Deploy, injection and the alert wait do not depend on how fast the machine is."""
    from itbench_agents.core.task import Limits
    from itbench_agents.harness.twin_env import TwinEnvironment
    from itbench_agents.scenario.registry import ScenarioRegistry

    env = TwinEnvironment(
        ScenarioRegistry.default().get("sre/ad-scaled-to-zero-v1"), seed=1, workdir=tmp_path
    )
    try:
        env.deploy()
        assert env.now() % 60 == 3600 % 60  # a whole minute plus the history
        env.inject()
        before = env.now()
        time.sleep(0.05)
        assert env.now() == before
        env.task(Limits())
        time.sleep(0.05)
        assert env.now() > before  # the agent's turn runs with wall time
        env.settle()
        after = env.now()
        time.sleep(0.05)
        assert env.now() == after
    finally:
        env.teardown()


def test_scheduler_runs_in_time_order_with_pinned_now():
    clock = ManualClock(0)
    s = Scheduler(clock)
    seen: list[tuple[str, float]] = []
    s.at(10, lambda: seen.append(("b", s.now())))
    s.at(5, lambda: seen.append(("a", s.now())))
    s.at(5, lambda: s.after(2, lambda: seen.append(("c", s.now()))))
    clock.advance(20)
    s.run_until()
    assert seen == [("a", 5), ("c", 7), ("b", 10)]


def test_scheduler_keyed_items_replace_each_other():
    clock = ManualClock(0)
    s = Scheduler(clock)
    seen: list[int] = []
    s.at(5, lambda: seen.append(1), key="k")
    s.at(6, lambda: seen.append(2), key="k")
    s.run_until(10)
    assert seen == [2]


def test_store_create_update_conflict_and_generation():
    clock = ManualClock(1_767_225_600)
    st = ObjectStore(clock.now, seed=1)
    pod = st.create(PODS, {"metadata": {"name": "a", "namespace": "ns"}, "spec": {"x": 1}})
    assert pod["metadata"]["resourceVersion"] == "1"
    assert pod["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert pod["metadata"]["generation"] == 1
    upd = clone(pod)
    upd["spec"]["x"] = 2
    pod2 = st.update(PODS, upd)
    assert pod2["metadata"]["generation"] == 2
    stale = clone(pod)
    stale["spec"]["x"] = 3
    with pytest.raises(ApiError) as e:
        st.update(PODS, stale)
    assert e.value.code == 409
    st2 = clone(pod2)
    st2["status"] = {"phase": "Running"}
    pod3 = st.update(PODS, st2, status_only=True)
    assert pod3["metadata"]["generation"] == 2 and pod3["status"]["phase"] == "Running"


def test_store_uids_are_deterministic_per_seed():
    def uids(seed: int) -> list[str]:
        st = ObjectStore(ManualClock(0).now, seed=seed)
        return [
            st.create(PODS, {"metadata": {"generateName": "p-", "namespace": "d"}})["metadata"]["uid"]
            for _ in range(3)
        ]

    assert uids(7) == uids(7)
    assert uids(7) != uids(8)


def test_store_log_and_finalizers():
    st = ObjectStore(ManualClock(0).now)
    st.create(PODS, {"metadata": {"name": "a", "namespace": "n", "finalizers": ["x"]}})
    st.delete(PODS, "n", "a")
    obj = st.get(PODS, "n", "a")
    assert obj is not None and obj["metadata"]["deletionTimestamp"]
    obj = clone(obj)
    obj["metadata"]["finalizers"] = []
    st.update(PODS, obj)
    assert st.get(PODS, "n", "a") is None
    assert [e.type for e in st.events_since(0)] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert [e.rv for e in st.events_since(2)] == [3, 4]
