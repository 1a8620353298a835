"""The API server's service proxy (``/api/v1/namespaces/NS/services/NAME[:PORT]/proxy/PATH``) on the
twin: the API server's refusals as a real one words them, and the app's answers from its behaviour
model — which agree with the user journeys' probe (``twin/app/front_door.py``)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
import requests
from kube_helpers import KUBECTL, needs_kubectl

from itbench_agents.twin.app.front_door import GOLDEN, match_operation, parse_service_ref
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.auth import request_attributes
from itbench_agents.twin.serve import running_twin


@pytest.fixture(scope="module")
def chain() -> Iterator[Twin]:
    with running_twin(app="chain") as twin:
        yield twin


def _get(twin: Twin, path: str) -> requests.Response:
    return requests.get(twin.endpoints.kube_url + path, timeout=10)


def test_operations_match_by_method_and_path_template() -> None:
    ops = ["GET /", "GET /api/products/{productId}", "POST /api/cart", "HTTP GET /hotels"]
    assert match_operation(ops, "GET", "/api/products/OLJCESPC7Z") == "GET /api/products/{productId}"
    assert match_operation(ops, "GET", "/api/products/") is None
    assert match_operation(ops, "GET", "/api/products/a/b") is None
    assert match_operation(ops, "POST", "/api/cart?currency=EUR") == "POST /api/cart"
    assert match_operation(ops, "GET", "/api/cart") is None
    assert match_operation(ops, "get", "/hotels") == "HTTP GET /hotels"
    assert parse_service_ref("https:web:8443") == ("web", "8443") and parse_service_ref("web") == ("web", "")


def test_the_failing_share_of_n_requests_is_the_error_ratio_give_or_take_one() -> None:
    for ratio in (0.0, 0.05, 0.3, 0.5, 0.97, 1.0):
        for n in (10, 20, 100):
            fails = sum((k * GOLDEN) % 1.0 < ratio for k in range(1, n + 1))
            assert abs(fails - ratio * n) <= 1, (ratio, n, fails)


def test_refusals_are_the_api_servers(chain: Twin) -> None:
    ok = _get(chain, "/api/v1/namespaces/chain/services/a/proxy/work")
    assert ok.status_code == 200 and ok.json() == {"service": "a", "operation": "GET /work", "ok": True}
    assert ok.headers["Server-Timing"].startswith("app;dur=")
    assert _get(chain, "/api/v1/namespaces/chain/services/a:8080/proxy/work").status_code == 200

    gone = _get(chain, "/api/v1/namespaces/chain/services/nope/proxy/work")
    assert gone.status_code == 404 and gone.json()["message"] == 'services "nope" not found'
    port = _get(chain, "/api/v1/namespaces/chain/services/a:9999/proxy/work")
    assert port.status_code == 503 and port.json()["reason"] == "ServiceUnavailable"
    assert port.json()["message"] == 'no endpoints available for service "a"'
    path = _get(chain, "/api/v1/namespaces/chain/services/a/proxy/no/such/page")
    assert path.status_code == 404 and path.text == "404 page not found\n"  # the app's 404, not a Status
    pods = _get(chain, "/api/v1/namespaces/chain/pods/x/proxy/")
    assert pods.status_code in (400, 404)  # pod proxies are not served


def test_the_rbac_resource_is_services_proxy() -> None:
    a = request_attributes("GET", "/api/v1/namespaces/chain/services/a:8080/proxy/work/deep")
    assert (a.verb, a.resource, a.subresource, a.name, a.namespace) == (
        "get",
        "services",
        "proxy",
        "a:8080",
        "chain",
    )
    assert request_attributes("POST", "/api/v1/namespaces/chain/services/a/proxy/x").verb == "create"


def test_the_official_client_and_kubectl_reach_the_app() -> None:
    with running_twin(app="chain") as twin:
        api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(twin.endpoints.kubeconfig))
        body = api.connect_get_namespaced_service_proxy_with_path("a", "chain", "work")
        assert "GET /work" in body
        if Path(KUBECTL).exists():
            out = subprocess.run(
                [KUBECTL, "--kubeconfig", twin.endpoints.kubeconfig, "get", "--raw",
                 "/api/v1/namespaces/chain/services/a/proxy/work"],
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert out.returncode == 0 and '"ok": true' in out.stdout


@needs_kubectl
@pytest.mark.parametrize("app", ["chain", "otel-demo", "hotel-reservation"])
def test_requests_through_the_proxy_agree_with_the_journeys_probe(app: str) -> None:
    """Healthy, then with a dependency of the entry service scaled to zero: every single-request
    journey fails through the proxy (more than the probe's error ratio of 20 requests) exactly
    when the in-process probe says it fails."""
    with running_twin(app=app) as twin:
        b = twin.app.behaviour
        ns = twin.app.namespace
        from itbench_agents.twin.app.journeys import journeys_spec

        steps = {
            n: j.steps[0]
            for n, j in journeys_spec(twin.app).journeys.items()
            if len(j.steps) == 1 and not j.consumers
        }
        assert steps

        def through_proxy() -> dict[str, bool]:
            out = {}
            for name, (service, op) in steps.items():
                method, path = op.split()[-2:]
                path = path.replace("{productId}", "OLJCESPC7Z")
                url = f"{twin.endpoints.kube_url}/api/v1/namespaces/{ns}/services/{service}/proxy{path}"
                codes = [requests.request(method, url, timeout=10).status_code for _ in range(20)]
                out[name] = sum(c >= 500 for c in codes) / 20 <= b.probe.max_error_ratio
            return out

        def in_process() -> dict[str, bool]:
            return {j.name: j.ok for j in twin.behaviour.journeys() if j.name in steps}

        assert through_proxy() == in_process() == dict.fromkeys(steps, True)
        entry = steps[next(iter(steps))][0]
        dep = next(iter(b.services[entry].dependencies))
        workload = b.services[dep].workload or dep
        subprocess.run(
            [KUBECTL, "--kubeconfig", twin.endpoints.kubeconfig, "-n", ns, "scale", "deploy", workload, "--replicas=0"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        twin.advance(120)
        broken = in_process()
        assert not all(broken.values())  # the fault breaks at least one journey
        assert through_proxy() == broken
