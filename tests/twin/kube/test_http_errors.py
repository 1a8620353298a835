"""Bad input gets the apiserver's Status answers (never a 500), over raw HTTP."""

from __future__ import annotations

import json

from kube_helpers import Cluster

JSON = {"Content-Type": "application/json"}


def _status(r: object) -> dict:
    body = r.json()  # type: ignore[attr-defined]
    assert body["kind"] == "Status" and body["status"] == "Failure"
    return body


def test_not_found_wording(cluster: Cluster) -> None:
    r = cluster.http("GET", "/api/v1/namespaces/default/pods/nope")
    assert r.status_code == 404
    assert _status(r)["message"] == 'pods "nope" not found'
    r = cluster.http("GET", "/apis/apps/v1/namespaces/default/deployments/nope")
    body = _status(r)
    assert body["message"] == 'deployments.apps "nope" not found' and body["details"]["group"] == "apps"
    r = cluster.http("GET", "/api/v1/namespaces/default/gizmos")
    assert (
        r.status_code == 404 and _status(r)["message"] == "the server could not find the requested resource"
    )
    r = cluster.http("GET", "/nonsense")
    assert r.status_code == 404


def test_malformed_bodies_are_400(cluster: Cluster) -> None:
    r = cluster.http("POST", "/api/v1/namespaces/default/configmaps", data=b"{not json", headers=JSON)
    assert r.status_code == 400 and _status(r)["reason"] == "BadRequest"
    r = cluster.http("POST", "/api/v1/namespaces/default/configmaps", data=b"[1,2]", headers=JSON)
    assert r.status_code == 400
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=b"a: [b",
        headers={"Content-Type": "application/yaml"},
    )
    assert r.status_code == 400
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
        headers=JSON,
    )
    assert r.status_code == 400 and "cannot be handled as a ConfigMap" in _status(r)["message"]
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": 1}}
        ),
        headers=JSON,
    )
    assert r.status_code == 400 and "cannot unmarshal" in _status(r)["message"]
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=b"\x0a\x0bk8s",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    assert r.status_code in (400, 415)


def test_invalid_is_422_with_causes(cluster: Cluster) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    r = cluster.http("POST", "/api/v1/namespaces/default/pods", json=pod)
    body = _status(r)
    assert r.status_code == 422 and body["reason"] == "Invalid"
    assert {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"} in body[
        "details"
    ]["causes"]
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
    )
    assert r.status_code == 422 and "name or generateName is required" in _status(r)["message"]


def test_conflict_on_stale_resource_version(cluster: Cluster) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    created = cluster.http("POST", "/api/v1/namespaces/default/configmaps", json=cm).json()
    stale = created["metadata"]["resourceVersion"]
    upd = {**created, "data": {"a": "2"}}
    assert cluster.http("PUT", "/api/v1/namespaces/default/configmaps/c", json=upd).status_code == 200
    again = {**created, "data": {"a": "3"}}
    again["metadata"]["resourceVersion"] = stale
    r = cluster.http("PUT", "/api/v1/namespaces/default/configmaps/c", json=again)
    assert r.status_code == 409 and _status(r)["reason"] == "Conflict"
    assert "the object has been modified" in r.json()["message"]
    r = cluster.http(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c",
        data=json.dumps({"metadata": {"resourceVersion": stale}, "data": {"a": "4"}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 409
    r = cluster.http("POST", "/api/v1/namespaces/default/configmaps", json=cm)
    assert r.status_code == 409 and _status(r)["reason"] == "AlreadyExists"


def test_method_and_media_type_errors(cluster: Cluster) -> None:
    assert cluster.http("PUT", "/api/v1/namespaces/default/configmaps").status_code == 405
    assert cluster.http("POST", "/apis/metrics.k8s.io/v1beta1/nodes", json={}).status_code == 405
    assert cluster.http("POST", "/version").status_code == 405
    cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}},
    )
    r = cluster.http(
        "PATCH", "/api/v1/namespaces/default/configmaps/m", data=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 415 and _status(r)["reason"] == "UnsupportedMediaType"
    r = cluster.http(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/m",
        data=b"{}",
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert r.status_code == 400 and "fieldManager" in r.json()["message"]
    r = cluster.http("GET", "/api/v1/namespaces/default/pods?labelSelector=a%3D%3D%3Db")
    assert r.status_code == 400
    r = cluster.http("GET", "/api/v1/namespaces/default/configmaps?limit=abc")
    assert r.status_code == 400
    r = cluster.http("GET", "/api/v1/namespaces/default/configmaps?continue=%%%")
    assert r.status_code == 400
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps?dryRun=Maybe",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q"}},
    )
    assert r.status_code == 400


def test_namespaced_create_in_missing_namespace_is_404(cluster: Cluster) -> None:
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/ghost/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
    )
    assert r.status_code == 404 and r.json()["message"] == 'namespaces "ghost" not found'
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}},
    )
    assert r.status_code == 400 and "does not match the namespace" in r.json()["message"]


def test_twin_control_endpoints(cluster: Cluster) -> None:
    before = cluster.http("GET", "/itbench/v1/now").json()["unix"]
    after = cluster.http("POST", "/itbench/v1/advance", json={"seconds": 90}).json()
    assert after["unix"] == before + 90 and after["now"].endswith("Z")
    assert cluster.http("POST", "/itbench/v1/advance", json={"seconds": "soon"}).status_code == 400
    assert cluster.http("POST", "/itbench/v1/advance", json={"seconds": -5}).status_code == 400
    assert cluster.http("GET", "/itbench/v1/advance").status_code == 405
