"""Bad input to OPA's REST API gets OPA's 4xx, never a crash or a hang (property test, in process)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itbench_agents.twin.addons.opa.engine import RegoEngine
from itbench_agents.twin.addons.opa.server import OpaApi
from itbench_agents.twin.addons.opa.store import OpaStore
from itbench_agents.twin.httpserver import Request


@pytest.fixture(scope="module")
def api() -> Iterator[OpaApi]:
    engine = RegoEngine(timeout_s=2)
    store = OpaStore(engine)
    store.put_policy("base", "package check\nimport rego.v1\ndefault result := false\nresult if input.ok\n")
    yield OpaApi(store)
    engine.close()


paths = st.sampled_from(
    ["/v1/policies", "/v1/policies/base", "/v1/policies/x/y", "/v1/data", "/v1/data/check/result",
     "/v1/data/a/b", "/v1/query", "/v1/itbench/eval", "/v1/itbench/check", "/health", "/v1/compile"]
)  # fmt: skip
methods = st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"])
bodies = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    ).map(lambda v: json.dumps(v).encode()),
    st.sampled_from([
        b'{"input": {"ok": true}}', b'{"query": "x := 1 +"}', b'{"query": "data.check.result"}',
        b'{"modules": {"p.rego": "package p\\nx := ["}, "query": "data.p.x"}',
        b'[{"op": "add", "path": "/x", "value": 1}]', b"package check\nresult := 1\n",
    ]),
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=methods, path=paths, body=bodies)
def test_any_request_gets_an_answer_with_opa_shape(api: OpaApi, method: str, path: str, body: bytes) -> None:
    resp = api(Request(method=method, path=path, query={}, headers={}, body=body))
    assert resp.status in (200, 204, 400, 404, 405, 413, 500), resp.status
    raw = bytes(resp.body)  # type: ignore[arg-type]
    if resp.status >= 400 and raw != b"404 page not found\n":  # OPA's error document
        doc = json.loads(raw)
        assert isinstance(doc, dict) and ("code" in doc or "errors" in doc)
    if resp.status == 500:  # only an evaluation that failed, with OPA's internal_error
        assert json.loads(raw)["code"] == "internal_error"
    # the base policy is never lost to a bad write
    if path == "/v1/policies/base" and method in ("PUT", "DELETE"):
        api.store.put_policy(
            "base", "package check\nimport rego.v1\ndefault result := false\nresult if input.ok\n"
        )
