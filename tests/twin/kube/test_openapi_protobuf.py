"""OpenAPI answers kubectl relies on (issue 11): /openapi/v2 in gnostic protobuf, 404 for a
group-version the cluster does not serve, 406 for a media type it cannot give — so that
`kubectl apply` of a kind without a CRD says what a real cluster says."""

from __future__ import annotations

import json

import pytest
import yaml
from kube_helpers import Cluster, needs_kubectl

from itbench_agents.twin.kube.openapi_pb import document, schema
from itbench_agents.twin.kube.protobuf import _fields

V2_PB = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

CLUSTER_POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-labels
spec:
  validationFailureAction: Enforce
  rules:
  - name: check
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {message: "label required", pattern: {metadata: {labels: {app: "?*"}}}}
"""


def _by_num(buf: bytes) -> dict[int, list[object]]:
    out: dict[int, list[object]] = {}
    for num, _, val in _fields(buf):
        out.setdefault(num, []).append(val)
    return out


def test_schema_encoding_round_trips_through_the_wire_format() -> None:
    s = {
        "description": "d",
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "string", "enum": ["X", "Y"]}, "n": {"type": "integer", "maximum": 5}},
        "additionalProperties": {"$ref": "#/definitions/q"},
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}],
    }
    f = _by_num(schema(s))
    assert f[4] == [b"d"] and f[19] == [b"a"]
    assert _by_num(f[22][0])[1] == [b"object"]  # TypeItem.value
    props = [_by_num(p) for p in _by_num(f[25][0])[1]]  # Properties.additional_properties
    assert [p[1][0] for p in props] == [b"a", b"n"]
    a = _by_num(props[0][2][0])
    assert [_by_num(e)[2][0] for e in a[20]] == [b'"X"', b'"Y"']  # enum values as YAML
    addl = _by_num(_by_num(f[21][0])[1][0])  # AdditionalPropertiesItem.schema
    assert addl[1] == [b"#/definitions/q"]
    ext = _by_num(f[31][0])
    assert ext[1] == [b"x-kubernetes-group-version-kind"]
    assert yaml.safe_load(_by_num(ext[2][0])[2][0]) == s["x-kubernetes-group-version-kind"]  # type: ignore[arg-type]
    doc = _by_num(
        document(
            {
                "swagger": "2.0",
                "info": {"title": "Kubernetes", "version": "v1"},
                "paths": {},
                "definitions": {"p": s},
            }
        )
    )
    assert doc[1] == [b"2.0"] and _by_num(doc[2][0])[1] == [b"Kubernetes"]


def test_openapi_v2_negotiation(cluster: Cluster) -> None:
    r = cluster.http("GET", "/openapi/v2", headers={"Accept": V2_PB})
    assert r.status_code == 200 and r.headers["Content-Type"].endswith("+protobuf")
    doc = _by_num(r.content)
    assert doc[1] == [b"2.0"]
    names = {_by_num(d)[1][0] for d in _by_num(doc[9][0])[1]}
    assert b"io.k8s.api.core.v1.Pod" in names and b"io.k8s.api.apps.v1.Deployment" in names
    assert (
        cluster.http("GET", "/openapi/v2", headers={"Accept": "application/json"}).json()["swagger"] == "2.0"
    )
    assert cluster.http("GET", "/openapi/v2").json()["swagger"] == "2.0"
    assert cluster.http("GET", "/openapi/v2", headers={"Accept": "text/html"}).status_code == 406


def test_openapi_v3_unknown_group_version_is_404(cluster: Cluster) -> None:
    assert cluster.http("GET", "/openapi/v3/apis/kyverno.io/v1").status_code == 404
    assert cluster.http("GET", "/openapi/v3/apis/apps/v9").status_code == 404
    assert cluster.http("GET", "/openapi/v3/api/v1").status_code == 200
    assert cluster.http("GET", "/openapi/v3/api/v1", headers={"Accept": "text/html"}).status_code == 406


@needs_kubectl
@pytest.mark.kubectl
def test_apply_of_a_kind_without_crd(cluster: Cluster) -> None:
    proc = cluster.kubectl("apply", "-f", "-", input=CLUSTER_POLICY, check=False)
    assert proc.returncode == 1
    assert "cannot parse invalid wire-format data" not in proc.stderr
    assert proc.stderr == (
        'error: resource mapping not found for name: "require-labels" namespace: "" from "STDIN": '
        'no matches for kind "ClusterPolicy" in version "kyverno.io/v1"\nensure CRDs are installed first\n'
    )


@needs_kubectl
@pytest.mark.kubectl
def test_apply_of_a_list_and_v2_explain(cluster: Cluster) -> None:
    """A `kind: List` is validated client-side against the v2 (protobuf) document."""
    items = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"a": "b"}}
        for i in range(2)
    ]
    out = cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    )
    assert "configmap/c0 created" in out.stdout and "configmap/c1 created" in out.stdout
    bad = {"apiVersion": "v1", "kind": "List", "items": [{**items[0], "data": {"a": 1}}]}
    proc = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert proc.returncode != 0 and "wire-format" not in proc.stderr
    explain = cluster.kubectl("explain", "deployment.spec.replicas", "--output=plaintext-openapiv2").stdout
    assert "FIELD:    replicas <integer>" in explain


def test_openapi_v3_protobuf(cluster: Cluster) -> None:
    r = cluster.http(
        "GET",
        "/openapi/v3/apis/apps/v1",
        headers={"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"},
    )
    assert r.status_code == 200 and r.headers["Content-Type"].endswith("+protobuf")
    doc = _by_num(r.content)
    assert doc[1] == [b"3.0.0"]
    schemas = {}
    for named in _by_num(_by_num(doc[5][0])[1][0])[1]:  # Components.schemas.additional_properties
        f = _by_num(named)
        schemas[f[1][0]] = _by_num(_by_num(f[2][0])[1][0])  # SchemaOrReference.schema
    dep = schemas[b"io.k8s.api.apps.v1.Deployment"]
    assert b"Deployment enables declarative updates" in dep[34][0]  # description
    props = {_by_num(p)[1][0]: _by_num(_by_num(p)[2][0]) for p in _by_num(dep[31][0])[1]}
    spec = _by_num(props[b"spec"][1][0])  # a schema with allOf: [Reference]
    ref = _by_num(_by_num(spec[26][0])[2][0])
    assert ref[1] == [b"#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"]
    ios = schemas[b"io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert [_by_num(_by_num(o)[1][0])[25] for o in ios[27]] == [[b"integer"], [b"string"]]  # oneOf types
    ext = {_by_num(e)[1][0] for e in dep[36]}
    assert b"x-kubernetes-group-version-kind" in ext
    paths = [_by_num(p)[1][0] for p in _by_num(doc[4][0])[1]]
    assert b"/apis/apps/v1/namespaces/{namespace}/deployments/{name}" in paths
