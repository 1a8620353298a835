"""OPA's REST API served by the twin's ``opa`` addon, driven by ``opa-python-client`` unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import requests
from opa_client.errors import DeletePolicyError, PolicyNotFoundError, RegoParseError
from opa_client.opa import OpaClient

from itbench_agents.twin.serve import running_twin

POLICY = """package check
import rego.v1

default result := false

result if {
  some line in input.sshd
  line == "PermitRootLogin no"
}

deny contains msg if {
  some line in input.sshd
  line == "PermitRootLogin yes"
  msg := "root login permitted"
}
"""


@pytest.fixture(scope="module")
def opa_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_twin(workdir=tmp_path_factory.mktemp("twin"), addons=["opa"]) as twin:
        assert twin.endpoints is not None and twin.endpoints.opa_url
        yield twin.endpoints.opa_url


@pytest.fixture
def client(opa_url: str) -> Iterator[OpaClient]:
    url = urlsplit(opa_url)
    c = OpaClient(host=str(url.hostname), port=int(url.port or 80), timeout=10)
    yield c
    c.close_connection()


def test_health_and_policy_crud(client: OpaClient) -> None:
    assert client.check_health()
    assert client.update_policy_from_string(POLICY, "sshd/root")
    assert "sshd/root" in client.get_policies_list()
    info = client.get_policies_info()["sshd/root"]
    assert info["path"].endswith("/check")
    assert any(r.endswith("/check/result") for r in info["rules"])
    assert client.get_policy("sshd/root")["result"]["raw"] == POLICY
    assert client.delete_policy("sshd/root")
    with pytest.raises(PolicyNotFoundError):
        client.get_policy("sshd/root")
    with pytest.raises(DeletePolicyError):
        client.delete_policy("sshd/root")


def test_decisions_false_true_and_undefined(client: OpaClient) -> None:
    client.update_policy_from_string(POLICY, "decide")
    try:
        assert client.query_rule({"sshd": ["PermitRootLogin no"]}, "check", "result") == {"result": True}
        # a rule whose value is false is false, not undefined (rego-cpp 1.5.2 answered undefined)
        assert client.query_rule({"sshd": ["PermitRootLogin yes"]}, "check", "result") == {"result": False}
        assert client.query_rule({"sshd": ["PermitRootLogin yes"]}, "check", "deny") == {
            "result": ["root login permitted"]
        }
        assert client.query_rule({}, "check", "nothing_here") == {}
    finally:
        client.delete_policy("decide")


def test_a_module_that_does_not_compile_is_refused_with_its_position(client: OpaClient, opa_url: str) -> None:
    bad = "package check\nimport rego.v1\nresult if {\n  input.a == \n}\n"
    with pytest.raises(RegoParseError):
        client.update_policy_from_string(bad, "broken")
    r = requests.put(f"{opa_url}/v1/policies/broken", data=bad, timeout=10)
    assert r.status_code == 400
    body = r.json()
    assert body["code"] == "invalid_parameter"
    assert body["message"] == "error(s) occurred while compiling module(s)"
    assert body["errors"][0]["code"] == "rego_parse_error"
    assert body["errors"][0]["location"] == {"file": "broken", "row": 5, "col": 1}  # the `}` (OPA: same row)
    assert "broken" not in client.get_policies_list()


def test_base_documents_and_ad_hoc_queries(client: OpaClient, opa_url: str) -> None:
    assert client.update_or_create_data({"min_len": 14}, "limits")
    client.update_policy_from_string(
        "package pw\nimport rego.v1\nok if input.len >= data.limits.min_len\n", "pw"
    )
    try:
        assert client.get_data("limits") == {"result": {"min_len": 14}}
        assert client.query_rule({"len": 16}, "pw", "ok") == {"result": True}
        assert client.query_rule({"len": 8}, "pw", "ok") == {}
        r = requests.post(f"{opa_url}/v1/query", json={"query": "x := data.limits.min_len + 1"}, timeout=10)
        assert r.json() == {"result": [{"x": 15}]}
    finally:
        client.delete_policy("pw")
        assert client.delete_data("limits")
    assert requests.get(f"{opa_url}/v1/data/limits", timeout=10).json() == {}


def test_bad_requests_get_opa_errors(opa_url: str) -> None:
    r = requests.post(f"{opa_url}/v1/data/check/result", data="{not json", timeout=10)
    assert r.status_code == 400 and r.json()["code"] == "invalid_parameter"
    r = requests.delete(f"{opa_url}/v1/data/never/written", timeout=10)
    assert r.status_code == 404 and r.json()["code"] == "resource_not_found"
    assert requests.get(f"{opa_url}/v2/nothing", timeout=10).status_code == 404


def test_a_policy_that_never_ends_is_an_error_not_a_hang(opa_url: str) -> None:
    slow = "package slow\nimport rego.v1\nn := count([x | some x in numbers.range(1, 1000000000)])\n"
    r = requests.post(
        f"{opa_url}/v1/itbench/eval",
        json={"modules": {"slow.rego": slow}, "query": "data.slow.n", "timeout_s": 0.5},
        timeout=60,
    )
    assert r.status_code == 400
    assert r.json()["errors"][0]["code"] == "eval_cancel_error"
    ok = requests.post(
        f"{opa_url}/v1/itbench/eval",
        json={"modules": {"p.rego": POLICY}, "query": "data.check.result", "input": {"sshd": []}},
        timeout=10,
    )
    assert ok.json()["result"][0]["expressions"][0]["value"] is False
