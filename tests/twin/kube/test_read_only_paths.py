"""Reads must not change what the store holds; label selectors print as the API writes them."""

from __future__ import annotations

import json

from kube_helpers import Cluster

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.kube.selectors import Requirement, selector_from_label_selector

PODS = GroupResource("", "pods")


def test_requirements_print_as_selector_strings() -> None:
    sel = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "zone", "operator": "NotIn", "values": ["x"]},
            {"key": "gpu", "operator": "Exists"},
            {"key": "spot", "operator": "DoesNotExist"},
        ],
    }
    assert ",".join(str(r) for r in selector_from_label_selector(sel)) == (
        "app=web,tier in (a,b),zone notin (x),gpu,!spot"
    )
    assert str(Requirement("app", "!=", ("db",))) == "app!=db"


def test_reading_logs_leaves_the_stored_pod_unchanged(cluster: Cluster) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "initContainers": [{"name": "init", "image": "registry.example/app:1.0"}],
            "containers": [{"name": "app", "image": "registry.example/app:1.0"}],
        },
    }
    cluster.twin.store.create(PODS, pod)
    cluster.advance(10)
    before = json.dumps(cluster.twin.store.get(PODS, "default", "p"), sort_keys=True)
    for _ in range(2):
        r = cluster.http("GET", "/api/v1/namespaces/default/pods/p/log?container=app")
        assert r.status_code == 200
    assert json.dumps(cluster.twin.store.get(PODS, "default", "p"), sort_keys=True) == before
