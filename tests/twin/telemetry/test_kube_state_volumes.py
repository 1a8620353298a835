"""kube-state-metrics' volume series on the twin: claims (info, requested bytes, phase) and
volumes (info, capacity, the claim they are bound to, phase), as PromQL sees them."""

from __future__ import annotations

from typing import Any

from itbench_agents.scenario.volumes import bound_claim
from itbench_agents.twin.clock import VirtualClock
from itbench_agents.twin.controllers.kinds import PVCS
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.prometheus.engine import Engine

NS = "shop"


def bound_pair(name: str, size: str) -> list[dict[str, Any]]:
    return bound_claim(NS, name, f"pvc-{name}", size)


def query(twin: Twin, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
    res = Engine(twin.metrics).instant(expr, int(twin.now() * 1000)).to_json()
    return {
        tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("__name__", "job"))): float(
            r["value"][1]
        )
        for r in res["result"]
    }


def test_claims_and_volumes_as_kube_state_metrics_shows_them() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    twin = Twin.for_manifests(
        [ns, *bound_pair("data-0", "10Gi"), *bound_pair("data-1", "2Gi")],
        clock=VirtualClock.paused_at(1_790_000_000.0),
    )
    try:
        twin.advance(120)
        gib = 1024**3
        assert query(twin, "kube_persistentvolume_capacity_bytes") == {
            (("persistentvolume", "pvc-data-0"),): 10 * gib,
            (("persistentvolume", "pvc-data-1"),): 2 * gib,
        }
        assert query(twin, 'kube_persistentvolume_claim_ref{persistentvolume="pvc-data-0"}') == {
            (("claim_namespace", NS), ("name", "data-0"), ("persistentvolume", "pvc-data-0")): 1.0
        }
        assert query(twin, 'kube_persistentvolume_status_phase{phase="Bound"} == 1').keys() == {
            (("persistentvolume", v), ("phase", "Bound")) for v in ("pvc-data-0", "pvc-data-1")
        }
        assert query(twin, 'kube_persistentvolumeclaim_info{persistentvolumeclaim="data-1"}') == {
            (
                ("namespace", NS),
                ("persistentvolumeclaim", "data-1"),
                ("storageclass", "standard"),
                ("volumename", "pvc-data-1"),
            ): 1.0
        }
        assert query(twin, "sum(kube_persistentvolumeclaim_resource_requests_storage_bytes)") == {
            (): 12.0 * gib
        }
        # the claim goes, its volume goes (reclaim policy Delete), and so do their series
        twin.store.delete(PVCS, NS, "data-0")
        twin.advance(120)
        assert set(query(twin, "kube_persistentvolume_capacity_bytes")) == {
            (("persistentvolume", "pvc-data-1"),)
        }
    finally:
        twin.close()
