"""kube-state-metrics and cAdvisor series follow the objects' history in the store."""

from __future__ import annotations

import numpy as np
from telemetry_fixtures import (
    NS,
    PODS,
    T0,
    FakeTwin,
    build_shop,
    chain_health,
    make_pod,
    node_obj,
    running_status,
    terminated,
    update,
    waiting_status,
)

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.health import AppHealth, ServiceHealth
from itbench_agents.twin.telemetry.hub import install_telemetry
from itbench_agents.twin.telemetry.sources import Matcher, Series, is_stale

DEPLOYMENTS = GroupResource("apps", "deployments")


def sel(twin, name: str, **labels: str) -> list[Series]:
    ms = [Matcher("__name__", "=", name), *(Matcher(k, "=", v) for k, v in labels.items())]
    return twin.metrics.select(ms, int(T0 * 1000), int(twin.now() * 1000))


def test_pod_series_appear_and_end_with_the_pod_with_a_stale_marker():
    twin = build_shop(history_s=300)
    t_created = twin.now()
    pod = make_pod("cart-5f6d7c8b9-xyzab", "cart")
    twin.store.create(PODS, pod)
    twin.advance(60)
    update(twin, PODS, running_status(pod, twin.now()))
    twin.advance(300)
    t_deleted = twin.now()
    twin.store.delete(PODS, NS, pod["metadata"]["name"])
    twin.advance(300)
    (info,) = sel(twin, "kube_pod_created", pod="cart-5f6d7c8b9-xyzab")
    ts = info.timestamps_ms / 1000
    assert ts[0] >= t_created and ts[0] - t_created < 15
    assert is_stale(float(info.values[-1]))
    assert ts[-1] >= t_deleted and ts[-1] - t_deleted <= 15
    assert not any(is_stale(float(v)) for v in info.values[:-1])
    (cpu,) = sel(twin, "container_cpu_usage_seconds_total", pod="cart-5f6d7c8b9-xyzab")
    assert cpu.timestamps_ms[0] / 1000 >= t_created + 60  # only while the container runs
    assert is_stale(float(cpu.values[-1]))
    # other pods are unaffected
    assert not is_stale(float(sel(twin, "kube_pod_created", pod="payment-7d4b9c6f5-abcde")[0].values[-1]))


def crashlooping_twin() -> tuple[FakeTwin, list[float]]:
    twin = FakeTwin()
    twin.store.create(GroupResource("", "nodes"), node_obj("node-1"))
    pod = make_pod("email-6c9f8d7b5-qwert", "email", mem_limit="100Mi")
    twin.store.create(PODS, pod)
    twin.health.append(
        AppHealth(
            T0,
            {"email": ServiceHealth("email", 1, 1, memory_bytes_per_pod=200e6, cpu_cores_per_pod=0.02)},
            (),
            NS,
        )
    )
    install_telemetry(twin)
    twin.advance(5)
    starts = [twin.now()]
    update(twin, PODS, running_status(pod, starts[0]))
    last = None
    for restart in (1, 2):
        twin.advance(120)
        last = terminated(starts[-1], twin.now(), "OOMKilled", 137)
        update(twin, PODS, waiting_status(pod, "CrashLoopBackOff", restart, last))
        twin.advance(30)
        starts.append(twin.now())
        update(twin, PODS, running_status(pod, starts[-1], restarts=restart, last=last))
    twin.advance(120)
    return twin, starts


def test_restart_counter_waiting_reason_and_last_terminated_reason():
    twin, starts = crashlooping_twin()
    (restarts,) = sel(twin, "kube_pod_container_status_restarts_total")
    assert np.all(np.diff(restarts.values) >= 0)
    assert sorted(set(restarts.values.tolist())) == [0.0, 1.0, 2.0]
    assert restarts.values[-1] == 2
    (waiting,) = sel(twin, "kube_pod_container_status_waiting_reason", reason="CrashLoopBackOff")
    present = waiting.values[~np.isnan(waiting.values)]
    assert len(present) >= 2 and np.all(present == 1)
    assert sum(is_stale(float(v)) for v in waiting.values) == 2  # gone twice, after each back-off
    (last,) = sel(twin, "kube_pod_container_status_last_terminated_reason")
    assert last.labels["reason"] == "OOMKilled"
    (code,) = sel(twin, "kube_pod_container_status_last_terminated_exitcode")
    assert code.values[-1] == 137


def test_cadvisor_cpu_counter_resets_per_instance_and_oom_events_count():
    twin, starts = crashlooping_twin()
    (cpu,) = sel(twin, "container_cpu_usage_seconds_total")
    v = cpu.values[~np.isnan(cpu.values)]
    assert (np.diff(v) < 0).sum() == 2  # two counter resets: two restarts
    (mem,) = sel(twin, "container_memory_working_set_bytes")
    m = mem.values[~np.isnan(mem.values)]
    assert np.all(m <= 100 * 2**20)  # capped at the limit (the model wants 200 MB)
    (oom,) = sel(twin, "container_oom_events_total")
    o = oom.values[~np.isnan(oom.values)]
    assert o[0] == 0 and o[-1] == 2


def test_cpu_rate_matches_health_and_throttling_when_demand_exceeds_limit():
    twin = build_shop(history_s=600)
    (cpu,) = sel(twin, "container_cpu_usage_seconds_total", container="frontend")
    t1 = twin.now() // 15 * 15
    i1 = np.searchsorted(cpu.timestamps_ms, t1 * 1000)
    i0 = np.searchsorted(cpu.timestamps_ms, (t1 - 300) * 1000)
    assert abs((cpu.values[i1] - cpu.values[i0]) / 300 - 0.2) < 0.01
    (thr,) = sel(twin, "container_cpu_cfs_throttled_periods_total", container="frontend")
    assert thr.values[-1] == 0
    # frontend now wants 2 cores under a 500m limit
    h = chain_health(twin.now())
    fe = h.services["frontend"]
    services = {
        **h.services,
        "frontend": ServiceHealth(
            fe.service, 1, 1, fe.operations, cpu_cores_per_pod=2.0, memory_bytes_per_pod=1e8
        ),
    }
    twin.health.append(AppHealth(twin.now(), services, h.edges, NS))
    twin.advance(600)
    t1 = twin.now() // 15 * 15
    (cpu,) = sel(twin, "container_cpu_usage_seconds_total", container="frontend")
    (thr,) = sel(twin, "container_cpu_cfs_throttled_periods_total", container="frontend")
    (per,) = sel(twin, "container_cpu_cfs_periods_total", container="frontend")

    def inc(s: Series) -> float:
        return float(
            s.values[np.searchsorted(s.timestamps_ms, t1 * 1000)]
            - s.values[np.searchsorted(s.timestamps_ms, (t1 - 300) * 1000)]
        )

    assert abs(inc(cpu) / 300 - 0.5) < 0.02  # capped at the limit
    assert inc(thr) / inc(per) > 0.9


def test_deployment_replicas_follow_spec_and_status():
    twin = build_shop(history_s=60)
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cart", "namespace": NS},
        "spec": {"replicas": 2},
        "status": {"replicas": 2, "availableReplicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
    }
    twin.store.create(DEPLOYMENTS, dep)
    twin.advance(120)
    dep["spec"]["replicas"] = 0
    dep["status"] = {"replicas": 0}
    update(twin, DEPLOYMENTS, dep)
    twin.advance(120)
    (spec,) = sel(twin, "kube_deployment_spec_replicas", deployment="cart")
    assert spec.values[0] == 2 and spec.values[-1] == 0
    (avail,) = sel(twin, "kube_deployment_status_replicas_available", deployment="cart")
    assert avail.values[-1] == 0


def test_node_series(shop):
    cpu = sel(shop, "node_cpu_seconds_total", node="node-1")
    assert len(cpu) == 4 * 4  # 4 cpus × 4 modes
    for s in cpu:
        assert np.all(np.diff(s.values) >= 0)
    idle = [s for s in cpu if s.labels["mode"] == "idle"]
    rate = sum((s.values[-1] - s.values[-41]) / 600 for s in idle)
    assert 3.0 < rate < 4.0  # mostly idle
    (avail,) = sel(shop, "node_memory_MemAvailable_bytes")
    assert 0 < avail.values[-1] < 16 * 2**30
