"""Property: no request — random paths, verbs, headers, bodies — yields a 500 or kills the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kube_helpers import Cluster, serve_cluster

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.instance import Twin


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    twin = Twin(seed=3, clock=ManualClock())
    twin.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm", "namespace": "default"},
                "data": {"a": "b"},
            },
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "default"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                },
            },
        ]
    )
    yield from serve_cluster(twin, Path(tmp_path_factory.mktemp("fuzz")))


SEGMENTS = st.sampled_from(
    [
        "api",
        "apis",
        "v1",
        "apps",
        "namespaces",
        "default",
        "kube-system",
        "pods",
        "deployments",
        "configmaps",
        "cm",
        "d",
        "status",
        "scale",
        "log",
        "eviction",
        "exec",
        "watch",
        "nodes",
        "metrics.k8s.io",
        "v1beta1",
        "openapi",
        "v3",
        "v2",
        "events",
        "events.k8s.io",
        "itbench",
        "advance",
        "now",
        "services",
        "..",
        "%00",
        "x" * 300,
        "",
        "customresourcedefinitions",
        "apiextensions.k8s.io",
        "binding",
        "finalize",
        "proxy",
        "namespaces",
    ]
)
QUERY = st.dictionaries(
    st.sampled_from(
        [
            "watch",
            "labelSelector",
            "fieldSelector",
            "limit",
            "continue",
            "dryRun",
            "timeoutSeconds",
            "resourceVersion",
            "container",
            "tailLines",
            "sinceSeconds",
            "propagationPolicy",
            "fieldValidation",
            "previous",
            "follow",
            "includeObject",
        ]
    ),
    st.one_of(
        st.text(max_size=20), st.sampled_from(["1", "true", "All", "0", "-1", "Strict", "a=b", "x in (y)"])
    ),
    max_size=4,
)
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10)),
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=10), kids, max_size=4)
    ),
    max_leaves=20,
)
OBJECTS = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["v1", "apps/v1", "bogus/v9"]),
        "kind": st.sampled_from(["ConfigMap", "Deployment", "Pod", "Namespace", "Nope"]),
        "metadata": st.one_of(
            JSONISH, st.fixed_dictionaries({"name": st.sampled_from(["cm", "d", "n-1", "BAD"])})
        ),
    },
    optional={"spec": JSONISH, "data": JSONISH, "status": JSONISH},
)
BODIES = st.one_of(
    st.just(b""),
    st.binary(max_size=64).map(lambda b: b"k8s\x00" + b),
    st.binary(max_size=64),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    OBJECTS.map(lambda v: json.dumps(v).encode()),
    st.lists(
        st.fixed_dictionaries(
            {
                "op": st.sampled_from(["add", "remove", "replace", "move", "test", "x"]),
                "path": st.sampled_from(["/spec", "/metadata/name", "/x/y", "", "/spec/replicas"]),
                "value": JSONISH,
            }
        ),
        max_size=3,
    ).map(lambda v: json.dumps(v).encode()),
)
CTYPES = st.sampled_from(
    [
        "application/json",
        "application/yaml",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
        "application/vnd.kubernetes.protobuf",
        "text/plain",
    ]
)
ACCEPTS = st.sampled_from(
    [
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        "*/*",
    ]
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
    segments=st.lists(SEGMENTS, max_size=8),
    query=QUERY,
    body=BODIES,
    ctype=CTYPES,
    accept=ACCEPTS,
)
def test_random_requests_never_500(
    fuzz_cluster: Cluster,
    method: str,
    segments: list[str],
    query: dict[str, str],
    body: bytes,
    ctype: str,
    accept: str,
) -> None:
    if query.get("watch") in ("1", "true"):
        query["timeoutSeconds"] = "0.2"
    path = "/" + "/".join(segments)
    r = requests.request(
        method,
        fuzz_cluster.url + path,
        params=query,
        data=body,
        headers={"Content-Type": ctype, "Accept": accept},
        timeout=20,
    )
    assert r.status_code < 500, (method, path, query, body, r.text[:500])
    # still alive
    assert requests.get(fuzz_cluster.url + "/version", timeout=5).status_code == 200
