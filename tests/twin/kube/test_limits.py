"""The apiserver's limits on what a write may carry (issue 11): YAML alias bombs, request size,
ConfigMap/Secret data size, annotation size and etcd's object size — with the real codes and words."""

from __future__ import annotations

import base64
import json
import time

import pytest
from kube_helpers import Cluster, needs_kubectl

from itbench_agents.twin.kube.decoding import YamlLimitError, allowed_alias_ratio, load_yaml

YAML = {"Content-Type": "application/yaml"}
JSON = {"Content-Type": "application/json"}
CMS = "/api/v1/namespaces/default/configmaps"

BOMB = """apiVersion: v1
kind: ConfigMap
metadata: {name: bomb}
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""


def _cm(name: str, value: str, **extra: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": value},
        **extra,
    }


def test_alias_bomb_is_refused_fast(cluster: Cluster) -> None:
    t0 = time.monotonic()
    r = cluster.http("POST", CMS, data=BOMB.encode(), headers=YAML)
    assert time.monotonic() - t0 < 5
    assert r.status_code == 400, r.text[:300]
    body = r.json()
    assert body["kind"] == "Status" and body["reason"] == "BadRequest"
    assert body["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): "
        "yaml: document contains excessive aliasing ("
    )
    assert cluster.http("GET", CMS + "/bomb").status_code == 404
    # an anchor that contains itself
    r = cluster.http(
        "POST", CMS, data=b"apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: x, y: *m}\n", headers=YAML
    )
    assert r.status_code == 400 and "value contains itself" in r.json()["message"]
    # server-side apply bodies are YAML too
    r = cluster.http(
        "PATCH",
        CMS + "/bomb?fieldManager=t",
        data=BOMB.encode(),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert r.status_code == 400 and "excessive aliasing" in r.json()["message"]


def test_ordinary_aliases_and_merge_keys_still_work(cluster: Cluster) -> None:
    doc = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, labels: &l {a: b}, annotations: *l}\n"
        "data: {x: &v hello, y: *v}\n"
    )
    r = cluster.http("POST", CMS, data=doc.encode(), headers=YAML)
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["data"] == {"x": "hello", "y": "hello"} and got["metadata"]["annotations"] == {"a": "b"}


def test_alias_ratio_rule() -> None:
    assert allowed_alias_ratio(1000) == 0.99 and allowed_alias_ratio(10_000_000) == 0.10
    assert 0.10 < allowed_alias_ratio(2_000_000) < 0.99
    # a few hundred aliases of a small anchor are fine (ratio stays below 99%)
    doc = "a: &a [1, 2, 3]\nb: [" + ", ".join(["*a"] * 300) + "]\n"
    assert len(load_yaml(doc)["b"]) == 300
    with pytest.raises(YamlLimitError):
        load_yaml(BOMB)


def test_request_entity_too_large(cluster: Cluster) -> None:
    big = json.dumps(_cm("huge", "x" * (10 * 1024 * 1024))).encode()
    r = cluster.http("POST", CMS, data=big, headers=JSON)
    assert r.status_code == 413
    body = r.json()
    assert body["reason"] == "RequestEntityTooLarge"
    assert body["message"] == "Request entity too large: limit is 3145728"
    assert cluster.http("GET", CMS + "/huge").status_code == 404


def test_configmap_and_secret_data_limit(cluster: Cluster) -> None:
    value = "x" * (1024 * 1024 + 1)
    r = cluster.http("POST", CMS, data=json.dumps(_cm("big", value)), headers=JSON)
    assert r.status_code == 422, r.text[:300]
    body = r.json()
    assert body["reason"] == "Invalid"
    assert body["message"] == 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes'
    assert body["details"]["causes"][0]["reason"] == "FieldValueTooLong"
    assert (
        cluster.http(
            "POST", CMS, data=json.dumps(_cm("fits", "x" * (1024 * 1024 - 10))), headers=JSON
        ).status_code
        == 201
    )
    # growing it past the limit with a patch is refused the same way
    r = cluster.http(
        "PATCH",
        CMS + "/fits",
        data=json.dumps({"data": {"more": "y" * 100}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 422
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": base64.b64encode(b"z" * (1024 * 1024 + 5)).decode()},
    }
    r = cluster.http("POST", "/api/v1/namespaces/default/secrets", data=json.dumps(secret), headers=JSON)
    assert r.status_code == 422 and "Too long: may not be more than 1048576 bytes" in r.json()["message"]


def test_annotation_limit(cluster: Cluster) -> None:
    obj = _cm("ann", "v")
    obj["metadata"]["annotations"] = {"a": "x" * (256 * 1024)}
    r = cluster.http("POST", CMS, data=json.dumps(obj), headers=JSON)
    assert r.status_code == 422
    assert r.json()["message"] == (
        'ConfigMap "ann" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes'
    )


def test_etcd_object_limit(cluster: Cluster) -> None:
    """A 2 MiB object without size-checked fields reaches "etcd" and is refused there."""
    obj = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "tpl"},
        "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "args": ["y" * 1000] * 2000}]},
        },
    }
    r = cluster.http("POST", "/api/v1/namespaces/default/podtemplates", data=json.dumps(obj), headers=JSON)
    assert r.status_code == 500
    assert r.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "etcdserver: request is too large",
        "code": 500,
    }
    # dry-run never reaches etcd
    r = cluster.http(
        "POST", "/api/v1/namespaces/default/podtemplates?dryRun=All", data=json.dumps(obj), headers=JSON
    )
    assert r.status_code == 201


@needs_kubectl
@pytest.mark.kubectl
def test_kubectl_sees_the_limits(cluster: Cluster, tmp_path: object) -> None:
    from pathlib import Path

    big = Path(str(tmp_path)) / "big.txt"
    big.write_text("x" * (4 * 1024 * 1024))
    proc = cluster.kubectl("create", "configmap", "big", f"--from-file=big.txt={big}", check=False)
    assert proc.returncode != 0 and "Request entity too large: limit is 3145728" in proc.stderr
    big.write_text("x" * (1024 * 1024 + 100))
    proc = cluster.kubectl("create", "configmap", "big", f"--from-file=big.txt={big}", check=False)
    assert proc.returncode != 0
    assert 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes' in proc.stderr


GIZMO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        ],
    },
}


def test_alias_bomb_in_a_schemaless_custom_resource(cluster: Cluster) -> None:
    """Where any shape is valid (preserve-unknown-fields), a 300-byte bomb would be stored as megabytes."""
    r = cluster.http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=GIZMO_CRD)
    assert r.status_code == 201
    bomb = BOMB.replace("apiVersion: v1\nkind: ConfigMap", "apiVersion: example.com/v1\nkind: Gizmo").replace(
        "data:", "spec:"
    )
    r = cluster.http(
        "POST", "/apis/example.com/v1/namespaces/default/gizmos", data=bomb.encode(), headers=YAML
    )
    assert r.status_code == 400 and "excessive aliasing" in r.json()["message"]
    assert "must be of type Gizmo" in r.json()["message"]
    listed = cluster.http("GET", "/apis/example.com/v1/gizmos")
    assert listed.json()["items"] == [] and len(listed.content) < 1000
    # a small aliased document in the same resource is fine
    ok = "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: ok}\nspec: {a: &x [1, 2], b: *x}\n"
    r = cluster.http("POST", "/apis/example.com/v1/namespaces/default/gizmos", data=ok.encode(), headers=YAML)
    assert r.status_code == 201 and r.json()["spec"] == {"a": [1, 2], "b": [1, 2]}


def test_json_patch_limits(cluster: Cluster) -> None:
    assert cluster.http("POST", CMS, data=json.dumps(_cm("jp", "x" * 1000)), headers=JSON).status_code == 201
    jp = {"Content-Type": "application/json-patch+json"}
    # each copy doubles the map: 40 of them would grow it to terabytes
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {}}]
    ops += [
        {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/a{i}"}
        for i in range(40)
    ]
    ops.insert(1, {"op": "copy", "from": "/data/k", "path": "/metadata/annotations/seed"})
    t0 = time.monotonic()
    r = cluster.http("PATCH", CMS + "/jp", data=json.dumps(ops), headers=jp)
    assert time.monotonic() - t0 < 5
    assert r.status_code == 413, r.text[:300]
    assert r.json()["reason"] == "RequestEntityTooLarge"
    assert "exceeding the limit 3145728" in r.json()["message"]
    too_many = [{"op": "test", "path": "/data/k", "value": "x"}] * 10_001
    r = cluster.http("PATCH", CMS + "/jp", data=json.dumps(too_many), headers=jp)
    assert r.status_code == 413
    assert r.json()["message"] == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    )
    # ordinary copies still work
    ok = [{"op": "copy", "from": "/data/k", "path": "/data/k2"}]
    r = cluster.http("PATCH", CMS + "/jp", data=json.dumps(ok), headers=jp)
    assert r.status_code == 200 and r.json()["data"]["k2"] == "x" * 1000
