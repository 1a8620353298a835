"""OpenCost's API and metrics as clients reach them: over HTTP from the endpoints a served twin
writes, with the request and response shapes of OpenCost's integration-test client
(``opencost-integration-tests/pkg/api``), and the cost metrics through PromQL with
``prometheus-api-client``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from prometheus_api_client import PrometheusConnect

from itbench_agents.twin.addons.opencost.pricing import CustomPricing
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.serve import running_twin


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    with running_twin(app="otel-demo", workdir=tmp_path_factory.mktemp("twin"), addons=["opencost"]) as twin:
        yield twin


def test_endpoints_name_the_opencost_url(served: Twin) -> None:
    ep = served.endpoints
    assert ep is not None and ep.opencost_url
    written = Path(ep.kubeconfig).parent / "endpoints.json"
    assert ep.opencost_url in written.read_text()
    assert requests.get(f"{ep.opencost_url}/healthz", timeout=10).status_code == 200


def test_allocation_request_as_opencosts_client_sends_it(served: Twin) -> None:
    assert served.endpoints is not None
    url = served.endpoints.opencost_url
    # AllocationRequest.QueryString(): accumulate, aggregate, ..., window — as a raw query string.
    # "60m", the last hour to the minute: OpenCost's "1h" is the current clock hour, only seconds
    # old (and costing nothing) when a run reaches this test just after the hour turns
    r = requests.get(
        f"{url}/allocation?accumulate=true&aggregate=namespace&includeIdle=true&window=60m", timeout=30
    )
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    body = r.json()
    assert body["code"] == 200 and isinstance(body["data"], list) and len(body["data"]) == 1
    ns = body["data"][0]
    assert {"otel-demo", "kube-system", "__idle__"} <= set(ns)
    shop = ns["otel-demo"]
    for field in (
        "name", "properties", "window", "start", "end", "minutes", "cpuCores", "cpuCoreHours",
        "cpuCoreRequestAverage", "cpuCoreUsageAverage", "cpuCost", "cpuEfficiency", "ramBytes",
        "ramByteHours", "ramByteRequestAverage", "ramByteUsageAverage", "ramCost", "ramEfficiency",
        "pvCost", "pvs", "totalCost", "totalEfficiency", "sharedCost", "externalCost", "networkCost",
    ):  # fmt: skip
        assert field in shop, field
    assert shop["name"] == "otel-demo" and shop["properties"]["namespace"] == "otel-demo"
    assert shop["totalCost"] > 0 and 0 < shop["ramEfficiency"] < 10


def test_assets_request_as_opencosts_client_sends_it(served: Twin) -> None:
    assert served.endpoints is not None
    r = requests.get(f'{served.endpoints.opencost_url}/assets?window=1h&filter=assetType:"node"', timeout=30)
    body = r.json()
    assert body["code"] == 200 and len(body["data"]) == 3
    node = next(iter(body["data"].values()))
    assert node["type"] == "Node" and node["cpuCores"] == 8 and node["ramBytes"] == 16 * 2**30


def test_bad_window_is_opencosts_plain_text_400(served: Twin) -> None:
    assert served.endpoints is not None
    r = requests.get(f"{served.endpoints.opencost_url}/allocation/compute?window=yesterdayish", timeout=10)
    assert r.status_code == 400 and r.text == "Invalid 'window' parameter: illegal window: yesterdayish\n"


def test_cost_metrics_through_promql(served: Twin) -> None:
    assert served.endpoints is not None
    pc = PrometheusConnect(url=served.endpoints.prometheus_url, disable_ssl=True)
    p = CustomPricing()
    total = pc.custom_query("sum(node_total_hourly_cost)")
    assert float(total[0]["value"][1]) == pytest.approx(3 * (8 * p.CPU + 16 * p.RAM))
    per_core = pc.custom_query('node_cpu_hourly_cost{node="twin-worker-1"}')
    assert per_core[0]["metric"]["job"] == "opencost" and float(per_core[0]["value"][1]) == pytest.approx(
        p.CPU
    )
    alloc = pc.custom_query(
        'sum by (pod) (container_cpu_allocation{namespace="otel-demo", pod=~"accounting-.*"})'
    )
    assert len(alloc) == 1 and float(alloc[0]["value"][1]) >= 0.25  # max(request 250m, usage)
    # the classic OpenCost dashboard query: hourly cost of a namespace's memory
    mem = pc.custom_query(
        'sum(container_memory_allocation_bytes{namespace="otel-demo"}) / 1024^3 * on() group_left() '
        "avg(node_ram_hourly_cost)"
    )
    assert float(mem[0]["value"][1]) > 0
    assert "container_cpu_allocation" in pc.all_metrics()


def test_a_bare_cluster_has_costs_too(tmp_path: Path) -> None:
    with running_twin(workdir=tmp_path, addons=["opencost"]) as twin:
        assert twin.endpoints is not None
        r = requests.get(
            f"{twin.endpoints.opencost_url}/allocation/compute?window=1h&aggregate=namespace", timeout=30
        )
        assert r.status_code == 200 and r.json()["code"] == 200
