"""The official ``kubernetes`` Python client works against the twin unchanged."""

from __future__ import annotations

import threading
import time

import pytest
from kube_helpers import Cluster


@pytest.fixture
def api(cluster: Cluster):  # type: ignore[no-untyped-def]
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
    return client.ApiClient(cfg)


def test_crud_and_lists_with_selectors(api, cluster: Cluster) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client

    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}}
    )
    core.create_namespaced_config_map("default", {"metadata": {"name": "b", "labels": {"x": "2"}}})
    names = [
        c.metadata.name for c in core.list_namespaced_config_map("default", label_selector="x in (1,2)").items
    ]
    assert names == ["a", "b"]
    assert [
        c.metadata.name for c in core.list_namespaced_config_map("default", label_selector="x!=1,x").items
    ] == ["b"]
    cm = core.read_namespaced_config_map("a", "default")
    assert cm.data == {"k": "v"} and cm.metadata.uid
    core.patch_namespaced_config_map("a", "default", {"data": {"k2": "v2"}})
    assert core.read_namespaced_config_map("a", "default").data == {"k": "v", "k2": "v2"}
    dep = {
        "metadata": {"name": "api"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api", "image": "python:3.11"}]},
            },
        },
    }
    created = apps.create_namespaced_deployment("default", dep)
    assert created.spec.strategy.type == "RollingUpdate" and created.metadata.generation == 1
    scale = apps.read_namespaced_deployment_scale("api", "default")
    assert scale.spec.replicas == 1
    apps.patch_namespaced_deployment_scale("api", "default", {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("api", "default").spec.replicas == 4
    with pytest.raises(client.ApiException) as e:
        core.read_namespaced_config_map("zzz", "default")
    assert e.value.status == 404
    core.delete_namespaced_config_map("a", "default")
    assert [
        c.metadata.name for c in core.list_namespaced_config_map("default", label_selector="x").items
    ] == ["b"]


def test_watch_delivers_events_in_order(api, cluster: Cluster) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client, watch

    core = client.CoreV1Api(api)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def run() -> None:
        w = watch.Watch()
        for ev in w.stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
        ):
            seen.append((ev["type"], ev["object"].metadata.name))
            if len(seen) == 3:
                w.stop()
        done.set()

    t = threading.Thread(target=run)
    t.start()
    core.create_namespaced_config_map("default", {"metadata": {"name": "w1"}})
    core.patch_namespaced_config_map("w1", "default", {"data": {"a": "b"}})
    core.delete_namespaced_config_map("w1", "default")
    assert done.wait(10)
    t.join(5)
    assert seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


def test_field_selectors_on_events(api, cluster: Cluster) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client

    core = client.CoreV1Api(api)
    for i, (kind, name) in enumerate([("Pod", "p1"), ("Pod", "p2"), ("Deployment", "p1")]):
        core.create_namespaced_event(
            "default",
            {
                "metadata": {"name": f"e{i}"},
                "involvedObject": {"kind": kind, "name": name, "namespace": "default"},
                "reason": "Test",
                "message": f"m{i}",
                "type": "Normal",
            },
        )
    got = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=p1,involvedObject.kind=Pod,reason=Test"
    ).items
    assert [e.metadata.name for e in got] == ["e0"]
    got = core.list_namespaced_event("default", field_selector="involvedObject.kind!=Pod").items
    assert [e.metadata.name for e in got if e.reason == "Test"] == ["e2"]


def test_delete_collection_validators_and_events_v1(api, cluster: Cluster) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client

    from itbench_agents.k8s.kinds import GroupResource

    core = client.CoreV1Api(api)
    for n in ("x1", "x2", "y1"):
        core.create_namespaced_config_map("default", {"metadata": {"name": n, "labels": {"g": n[0]}}})
    core.delete_collection_namespaced_config_map("default", label_selector="g=x")
    assert [
        c.metadata.name for c in core.list_namespaced_config_map("default", label_selector="g").items
    ] == ["y1"]

    def no_secret_words(obj: dict) -> list[tuple[str, str, str]]:
        data = obj.get("data") or {}
        return [
            (f"data[{k}]", "FieldValueForbidden", "Forbidden: no passwords") for k in data if "password" in k
        ]

    cluster.twin.validators[GroupResource("", "configmaps")] = [no_secret_words]
    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "z"}, "data": {"password": "x"}})
    assert e.value.status == 422 and "data[password]: Forbidden: no passwords" in e.value.body
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "ev1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Killing",
            "message": "Stopping container",
            "type": "Normal",
            "source": {"component": "kubelet"},
        },
    )
    raw = cluster.http("GET", "/apis/events.k8s.io/v1/namespaces/default/events").json()
    ev = next(i for i in raw["items"] if i["metadata"]["name"] == "ev1")
    assert ev["regarding"]["name"] == "p" and ev["note"] == "Stopping container" and ev["reason"] == "Killing"


def test_watch_with_label_selector_sees_objects_enter_and_leave(api, cluster: Cluster) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import client, watch

    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "m", "labels": {"team": "a"}}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def run() -> None:
        w = watch.Watch()
        for ev in w.stream(
            core.list_namespaced_config_map,
            "default",
            label_selector="team=b",
            resource_version=rv,
            timeout_seconds=5,
        ):
            seen.append((ev["type"], ev["object"].metadata.labels["team"]))
            if len(seen) == 2:
                w.stop()
        done.set()

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    core.patch_namespaced_config_map("m", "default", {"metadata": {"labels": {"team": "b"}}})
    core.patch_namespaced_config_map("m", "default", {"metadata": {"labels": {"team": "c"}}})
    assert done.wait(10)
    t.join(5)
    assert seen == [("ADDED", "b"), ("DELETED", "c")]
