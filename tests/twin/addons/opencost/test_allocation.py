"""OpenCost's allocation and asset APIs on a twin running the Astronomy Shop.

The invariants are the ones OpenCost's own integration tests check on a real cluster
(``opencost/opencost-integration-tests``: total cost is the sum of its parts, no cost is negative,
aggregating conserves cost, accumulating equals summing the steps, equivalent windows agree, idle
plus allocations is what the nodes cost); the rest checks that cost follows the cluster's state.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.addons.opencost.addon import OpenCostAddon
from itbench_agents.twin.addons.opencost.allocation import IDLE, UNMOUNTED
from itbench_agents.twin.addons.opencost.pricing import CustomPricing
from itbench_agents.twin.httpserver import Request, Response
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.store import clone
from itbench_agents.twin.prometheus.server import make_prometheus_handler

DEPLOYMENTS = GroupResource("apps", "deployments")
PVCS = GroupResource("", "persistentvolumeclaims")
PODS = GroupResource("", "pods")
GIB = 2.0**30


def call(twin: Twin, path: str, **params: str) -> Response:
    api = twin.addons["opencost"].make_handler(twin)
    return api(Request("GET", path, {k: [v] for k, v in params.items()}, {}))  # type: ignore[no-any-return]


def data(twin: Twin, path: str, **params: str) -> Any:
    r = call(twin, path, **params)
    assert r.status == 200, r.body
    body = json.loads(r.body)  # type: ignore[arg-type]
    assert body["code"] == 200 and body["status"] == "success"
    return body["data"]


def past_day(twin: Twin) -> str:
    """A closed day-long window that ended an hour ago, as OpenCost's RFC 3339 pair."""
    import time

    end = (twin.now() - 3600) // 3600 * 3600
    f = "%Y-%m-%dT%H:%M:%SZ"
    return f"{time.strftime(f, time.gmtime(end - 86400))},{time.strftime(f, time.gmtime(end))}"


@pytest.fixture(scope="module")
def shop() -> Twin:
    return Twin.for_app("otel-demo", history_s=2 * 86400, addons=["opencost"])


def total(sets: list[dict[str, Any]], key: str = "totalCost", skip: tuple[str, ...] = ()) -> float:
    return sum(a[key] for s in sets for n, a in s.items() if n not in skip)


def test_total_cost_is_the_sum_of_its_parts_and_nothing_is_negative(shop: Twin) -> None:
    sets = data(shop, "/allocation/compute", window=past_day(shop), step="6h", includeIdle="true")
    assert len(sets) == 4
    for s in sets:
        assert s
        for name, a in s.items():
            parts = (
                a["cpuCost"] + a["ramCost"] + a["gpuCost"] + a["pvCost"] + a["networkCost"] + a["sharedCost"]
            )
            parts += a["externalCost"] + a["loadBalancerCost"]
            assert a["totalCost"] == pytest.approx(parts, abs=5e-5), name
            for k, v in a.items():
                if isinstance(v, float):
                    assert v >= 0, (name, k)


def test_aggregation_conserves_cost(shop: Twin) -> None:
    w = past_day(shop)
    raw = data(shop, "/allocation/compute", window=w, accumulate="true")
    want = total(raw)
    assert want > 0
    for agg in (
        "namespace",
        "pod",
        "controller",
        "node",
        "label:app",
        "namespace,label:app",
        "cluster",
        "service",
    ):
        got = total(data(shop, "/allocation/compute", window=w, accumulate="true", aggregate=agg))
        assert got == pytest.approx(want, rel=1e-4), agg


def test_accumulating_equals_summing_the_steps(shop: Twin) -> None:
    w = past_day(shop)
    steps = data(shop, "/allocation/compute", window=w, step="1h", aggregate="namespace")
    assert len(steps) == 24
    acc = data(shop, "/allocation/compute", window=w, step="1h", aggregate="namespace", accumulate="true")
    assert len(acc) == 1
    for ns, a in acc[0].items():
        # each step is rounded to 5 decimals, as OpenCost rounds it: 24 roundings of at most 5e-6
        assert a["totalCost"] == pytest.approx(
            sum(s[ns]["totalCost"] for s in steps if ns in s), rel=1e-4, abs=24 * 5e-6
        )
    by_day = data(shop, "/allocation/compute", window="2d", aggregate="namespace", accumulate="day")
    assert len(by_day) == 2


def test_equivalent_windows_agree(shop: Twin) -> None:
    import calendar
    import time

    w = past_day(shop)
    a, b = (calendar.timegm(time.strptime(x, "%Y-%m-%dT%H:%M:%SZ")) for x in w.split(","))
    rfc = data(shop, "/allocation/compute", window=w, aggregate="namespace")
    unix = data(shop, "/allocation/compute", window=f"{a},{b}", aggregate="namespace")
    assert rfc == unix
    assert rfc[0]["otel-demo"]["window"] == {"start": w.split(",")[0], "end": w.split(",")[1]}


def test_idle_plus_allocations_is_what_the_nodes_cost(shop: Twin) -> None:
    w = past_day(shop)
    sets = data(shop, "/allocation/compute", window=w, accumulate="true", includeIdle="true")
    assets = data(shop, "/assets", window=w)
    nodes = [a for a in assets.values() if a["type"] == "Node"]
    assert len(nodes) == 3
    node_cost = sum(a["totalCost"] for a in nodes)
    cpu_ram = sum(a["cpuCost"] + a["ramCost"] for a in sets[0].values())
    assert cpu_ram == pytest.approx(node_cost, rel=1e-4)
    assert sets[0][IDLE]["totalCost"] > 0
    # shared idle: the same money, spread over the allocations
    shared = data(shop, "/allocation/compute", window=w, accumulate="true", shareIdle="true")
    assert IDLE not in shared[0]
    assert total(shared) == pytest.approx(node_cost, rel=1e-4)
    # the cost of a node: 8 cores and 16 GiB for 24 hours at OpenCost's default rates
    p = CustomPricing()
    assert nodes[0]["totalCost"] == pytest.approx(24 * (8 * p.CPU + 16 * p.RAM), rel=1e-4)
    assert nodes[0]["properties"]["category"] == "Compute"
    only_nodes = data(shop, "/assets", window=w, filter='assetType:"node"')
    assert len(only_nodes) == 3


def test_allocation_is_max_of_request_and_usage_priced_at_the_nodes_rates(shop: Twin) -> None:
    sets = data(shop, "/allocation/compute", window=past_day(shop), accumulate="true", aggregate="deployment")
    acc = sets[0]["accounting"]  # requests 250m CPU, 256Mi
    p = CustomPricing()
    assert acc["cpuCoreRequestAverage"] == pytest.approx(0.25)
    assert acc["ramByteRequestAverage"] == pytest.approx(256 * 2**20)
    assert acc["cpuCores"] >= max(acc["cpuCoreRequestAverage"], acc["cpuCoreUsageAverage"]) - 1e-5
    assert acc["cpuCost"] == pytest.approx(acc["cpuCoreHours"] * p.CPU, rel=1e-4)
    assert acc["ramCost"] == pytest.approx(acc["ramByteHours"] / GIB * p.RAM, rel=1e-4)
    assert acc["cpuEfficiency"] == pytest.approx(
        acc["cpuCoreUsageAverage"] / acc["cpuCoreRequestAverage"], rel=1e-3
    )
    assert acc["minutes"] == pytest.approx(24 * 60)
    # a container without a request: efficiency 1 when it costs something (OpenCost's rule)
    cart = sets[0]["cart"]
    assert cart["cpuCoreRequestAverage"] == 0 and cart["cpuEfficiency"] == 1.0
    # controller kinds as OpenCost names them, and the owning Deployment through its ReplicaSet
    ctl = data(shop, "/allocation/compute", window=past_day(shop), accumulate="true", aggregate="controller")
    assert "deployment:accounting" in ctl[0]
    pod = data(
        shop,
        "/allocation/compute",
        window=past_day(shop),
        accumulate="true",
        filter='namespace:"otel-demo"+controllerName:"accounting"',
    )
    ((name, a),) = pod[0].items()
    assert name.startswith("default-cluster/twin-worker-") and name.endswith("/accounting")
    assert a["properties"]["controllerKind"] == "deployment" and a["properties"]["namespace"] == "otel-demo"


def test_filters_narrow_the_allocations(shop: Twin) -> None:
    w = past_day(shop)
    ns = data(
        shop,
        "/allocation/compute",
        window=w,
        accumulate="true",
        aggregate="namespace",
        filter='namespace:"otel-demo"',
    )
    assert list(ns[0]) == ["otel-demo"]
    neg = data(
        shop,
        "/allocation/compute",
        window=w,
        accumulate="true",
        aggregate="namespace",
        filter='namespace!:"otel-demo"',
    )
    assert "otel-demo" not in neg[0] and neg[0]


def test_more_replicas_cost_more_from_the_moment_they_run() -> None:
    twin = Twin.for_app("otel-demo", history_s=3600, addons=["opencost"])
    before_end = twin.now()
    d = clone(twin.store.get(DEPLOYMENTS, "otel-demo", "accounting"))
    d["spec"]["replicas"] = 4
    d["metadata"].pop("resourceVersion")
    twin.store.update(DEPLOYMENTS, d)
    twin.advance(3600)
    win = f"{int(before_end - 3600)},{int(before_end)}"
    after = f"{int(twin.now() - 3000)},{int(twin.now())}"
    one = data(twin, "/allocation/compute", window=win, aggregate="deployment", accumulate="true")[0][
        "accounting"
    ]
    four = data(twin, "/allocation/compute", window=after, aggregate="deployment", accumulate="true")[0][
        "accounting"
    ]
    assert four["cpuCoreRequestAverage"] == pytest.approx(1.0)
    assert four["ramCost"] / 50 == pytest.approx(4 * one["ramCost"] / 60, rel=0.02)


def test_volumes_are_charged_to_the_pods_that_mount_them_then_unmounted() -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "standard",
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "db", "namespace": "default", "labels": {"app": "db"}},
        "spec": {
            "containers": [
                {
                    "name": "db",
                    "image": "postgres:16",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    local_path = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "rancher.io/local-path",
        "volumeBindingMode": "Immediate",
    }
    p = CustomPricing(storage=0.01)  # large enough that 5-decimal rounding does not hide the sums
    twin = Twin.for_manifests([local_path, claim, pod], addons=[OpenCostAddon(p)])
    twin.advance(3600)
    t0 = twin.now()
    twin.store.delete(PODS, "default", "db")
    twin.advance(3600)
    mounted = data(
        twin, "/allocation/compute", window=f"{int(t0 - 3000)},{int(t0 - 600)}", accumulate="true"
    )[0]
    ((name, a),) = ((n, a) for n, a in mounted.items() if n.endswith("/db/db"))
    assert a["pvCost"] == pytest.approx(10 * p.storage * 2400 / 3600, rel=1e-3)
    assert list(a["pvs"].values())[0]["providerID"].startswith("pvc-")
    assert a["cpuCost"] == pytest.approx(p.CPU * 2400 / 3600, rel=1e-3)
    later = data(twin, "/allocation/compute", window=f"{int(t0 + 600)},{int(t0 + 3000)}", accumulate="true")[
        0
    ]
    assert later[UNMOUNTED]["pvCost"] == pytest.approx(10 * p.storage * 2400 / 3600, rel=1e-3)
    assert not any(n.endswith("/db/db") for n in later)
    disks = data(twin, "/assets", window=f"{int(t0 - 3000)},{int(t0 + 3000)}", filter='assetType:"disk"')
    (disk,) = disks.values()
    assert disk["claimName"] == "data" and disk["bytes"] == 10 * GIB
    # and the metrics OpenCost exports for them, through the twin's Prometheus
    prom = make_prometheus_handler(twin)

    def instant(q: str, t: float) -> list[Any]:
        r = prom(Request("GET", "/api/v1/query", {"query": [q], "time": [str(t)]}, {}))
        return json.loads(r.body)["data"]["result"]  # type: ignore[arg-type,no-any-return]

    (pv,) = instant("pv_hourly_cost", t0)
    assert float(pv["value"][1]) == pytest.approx(0.01) and pv["metric"]["persistentvolume"].startswith(
        "pvc-"
    )
    (used,) = instant("pod_pvc_allocation", t0 - 600)
    assert used["metric"]["persistentvolumeclaim"] == "data" and float(used["value"][1]) == 10 * GIB
    assert instant("pod_pvc_allocation", t0 + 600) == []


@pytest.mark.parametrize(
    ("params", "status", "body"),
    [
        ({}, 400, "Invalid 'window' parameter: illegal window: \n"),
        ({"window": "7x"}, 400, "Invalid 'window' parameter: illegal window: 7x\n"),
        (
            {"window": "1d", "aggregate": "flavour"},
            400,
            "Invalid 'aggregate' parameter: unrecognized aggregation property: flavour\n",
        ),
        (
            {"window": "1d", "step": "soon"},
            400,
            '"message":"Invalid step parameter: time: invalid duration \\"soon\\""',
        ),
        ({"window": "30d", "step": "1m"}, 400, "makes 43200 sets; at most 10000 are allowed"),
        ({"window": "1d", "filter": 'namespace:"a'}, 400, "Invalid 'filter' parameter: unexpected character"),
        ({"window": "1d", "accumulate": "fortnight"}, 400, "unknown accumulate option 'fortnight'"),
        ({"window": "1700000000,1600000000"}, 400, "is empty"),
    ],
)
def test_bad_queries_get_opencosts_errors(shop: Twin, params: dict[str, str], status: int, body: str) -> None:
    r = call(shop, "/allocation/compute", **params)
    assert r.status == status
    assert body in r.body.decode()  # type: ignore[union-attr]


def test_unknown_routes_and_methods(shop: Twin) -> None:
    assert call(shop, "/nope").status == 404
    api = shop.addons["opencost"].make_handler(shop)
    assert api(Request("POST", "/allocation", {}, {})).status == 405
    assert call(shop, "/healthz").status == 200


def test_future_steps_are_empty_sets(shop: Twin) -> None:
    sets = data(shop, "/allocation/compute", window="today", step="1h", aggregate="namespace")
    assert len(sets) == 24
    assert sets[-1] == {} or math.isclose(shop.now() % 86400, 86400, abs_tol=3600)
