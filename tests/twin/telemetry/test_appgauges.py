"""Behaviour-model gauges (Kafka lag), datastore exporters and ``up``."""

from __future__ import annotations

import numpy as np
from telemetry_fixtures import NS, T0, build_shop, chain_health

from itbench_agents.twin.health import AppHealth, ServiceHealth
from itbench_agents.twin.telemetry.sources import Matcher, is_stale


def sel(twin, name: str, **labels: str):
    ms = [Matcher("__name__", "=", name), *(Matcher(k, "=", v) for k, v in labels.items())]
    return twin.metrics.select(ms, int(T0 * 1000), int(twin.now() * 1000))


def with_consumer(h: AppHealth, lag: float | None) -> AppHealth:
    gauges = ()
    if lag is not None:
        g = (("group", "fraud-detection"), ("topic", "orders"))
        gauges = (("kafka_consumer_group_lag", g, lag), ("kafka_consumer_group_members", g, 1.0))
    fd = ServiceHealth("fraud-detection", 1, 1, extra_gauges=gauges)
    vk = ServiceHealth("valkey-cart", 1, 1, memory_bytes_per_pod=3e6)
    return AppHealth(h.since, {**h.services, "fraud-detection": fd, "valkey-cart": vk}, h.edges, NS)


def test_kafka_lag_under_both_naming_schemes_follows_health():
    twin = build_shop(history_s=0)
    twin.health.append(with_consumer(chain_health(twin.now()), 0.0))
    twin.advance(300)
    twin.health.append(with_consumer(chain_health(twin.now()), 450.0))
    twin.advance(300)
    twin.health.append(with_consumer(chain_health(twin.now()), None))  # consumer gone: series ends
    twin.advance(60)
    (native,) = sel(twin, "kafka_consumer_group_lag")
    (exporter,) = sel(twin, "kafka_consumergroup_lag")
    assert exporter.labels == {
        "__name__": "kafka_consumergroup_lag",
        "consumergroup": "fraud-detection",
        "topic": "orders",
        "partition": "0",
        "namespace": NS,
        "job": f"{NS}/fraud-detection",
    }
    vals = exporter.values[:-1]
    assert set(vals.tolist()) == {0.0, 450.0}
    assert is_stale(float(exporter.values[-1])) and is_stale(float(native.values[-1]))
    (members,) = sel(twin, "kafka_consumergroup_members")
    assert "topic" not in members.labels and members.labels["consumergroup"] == "fraud-detection"
    assert "kafka_consumergroup_lag" in twin.metrics.metadata()


def test_datastore_exporters_and_up():
    twin = build_shop(history_s=0)
    twin.health.append(with_consumer(chain_health(twin.now()), 0.0))
    twin.advance(120)
    (up,) = sel(twin, "redis_up")
    assert np.all(up.values == 1)
    (mem,) = sel(twin, "redis_memory_used_bytes")
    assert mem.values[-1] == 3e6
    ups = sel(twin, "up")
    assert {s.labels["job"] for s in ups} == {"kube-state-metrics", "kubelet", "node-exporter"}
