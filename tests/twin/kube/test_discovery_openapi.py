"""Discovery and OpenAPI: what kubectl reads before it does anything else."""

from __future__ import annotations

import json

import pytest
from kube_helpers import DEPLOYMENT, SHARED, Cluster, needs_kubectl

from itbench_agents.twin.kube.discovery import AGGREGATED_V2

AGG_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)
DERIVED = SHARED / "conformance" / "kubernetes" / "discovery" / "derived-v1.36"


def test_version_and_legacy_discovery(cluster: Cluster) -> None:
    v = cluster.http("GET", "/version").json()
    assert v["major"] == "1" and v["gitVersion"].startswith("v1.")
    api = cluster.http("GET", "/api").json()
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    groups = cluster.http("GET", "/apis").json()
    names = [g["name"] for g in groups["groups"]]
    assert names.index("apps") < names.index("batch")
    assert {"metrics.k8s.io", "apiextensions.k8s.io", "rbac.authorization.k8s.io"} <= set(names)
    core = cluster.http("GET", "/api/v1").json()
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["shortNames"] == ["po"] and pods["categories"] == ["all"] and pods["namespaced"]
    scale = next(
        r
        for r in cluster.http("GET", "/apis/apps/v1").json()["resources"]
        if r["name"] == "deployments/scale"
    )
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert cluster.http("GET", "/apis/nope.example.com/v1").status_code == 404


def test_aggregated_discovery_when_asked(cluster: Cluster) -> None:
    r = cluster.http("GET", "/apis", headers={"Accept": AGG_ACCEPT})
    assert r.headers["Content-Type"] == AGGREGATED_V2
    body = r.json()
    assert body["kind"] == "APIGroupDiscoveryList" and body["apiVersion"] == "apidiscovery.k8s.io/v2"
    apps = next(i for i in body["items"] if i["metadata"]["name"] == "apps")
    deploy = next(res for res in apps["versions"][0]["resources"] if res["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced" and deploy["shortNames"] == ["deploy"]
    assert {s["subresource"] for s in deploy["subresources"]} == {"scale", "status"}
    core = cluster.http("GET", "/api", headers={"Accept": AGG_ACCEPT}).json()
    assert [i["versions"][0]["version"] for i in core["items"]] == ["v1"]


@pytest.mark.skipif(not DERIVED.is_dir(), reason=f"upstream discovery data not found at {DERIVED}")
def test_served_resources_match_upstream_discovery(cluster: Cluster) -> None:
    """Every resource we serve has upstream's kind, scope, verbs, short names and categories."""
    mismatches = []
    for path in sorted(DERIVED.glob("api*__v*.json")):
        if path.name.startswith("aggregated"):
            continue
        upstream = json.loads(path.read_text())
        gv = upstream["groupVersion"]
        url = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        ours = cluster.http("GET", url)
        if ours.status_code == 404:
            continue
        served = {r["name"]: r for r in ours.json()["resources"]}
        for up in upstream["resources"]:
            mine = served.get(up["name"])
            if mine is None:
                continue
            for key in ("kind", "namespaced", "verbs", "shortNames", "categories", "singularName"):
                if "/" in up["name"] and key == "singularName":
                    continue
                if (
                    sorted(up.get(key) or [])
                    if isinstance(up.get(key), list)
                    else up.get(key) != mine.get(key)
                ):
                    a = sorted(up.get(key) or []) if isinstance(up.get(key), list) else up.get(key)
                    b = sorted(mine.get(key) or []) if isinstance(mine.get(key), list) else mine.get(key)
                    if a != b:
                        mismatches.append(f"{gv} {up['name']} {key}: upstream {a} ours {b}")
    assert not mismatches, "\n".join(mismatches)


@needs_kubectl
def test_kubectl_api_resources_and_explain(cluster: Cluster) -> None:
    out = cluster.kubectl("api-resources").stdout.splitlines()
    assert out[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows: dict[str, list[str]] = {}
    for line in out[1:]:
        rows.setdefault(line.split()[0], line.split())
    assert rows["deployments"][1:] == ["deploy", "apps/v1", "true", "Deployment"]
    assert rows["nodes"][1:] == ["no", "v1", "false", "Node"]
    assert "pods" in rows and "horizontalpodautoscalers" in rows and "customresourcedefinitions" in rows
    explain = cluster.kubectl("explain", "deployment.spec.replicas").stdout
    assert "KIND:       Deployment" in explain and "FIELD: replicas <integer>" in explain
    assert "Number of desired pods" in explain
    pod = cluster.kubectl("explain", "pods.spec.containers").stdout
    assert "<[]Container>" in pod and "-required-" in pod and "image\t<string>" in pod


def test_openapi_v3_carries_gvk_merge_keys_and_field_validation(cluster: Cluster) -> None:
    root = cluster.http("GET", "/openapi/v3").json()
    url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    doc = cluster.http("GET", url).json()
    schemas = doc["components"]["schemas"]
    dep = schemas["io.k8s.api.apps.v1.Deployment"]
    assert dep["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert "io.k8s.api.core.v1.ServiceSpec" not in schemas  # services live in the core document
    core = cluster.http("GET", root["paths"]["api/v1"]["serverRelativeURL"]).json()["components"]["schemas"]
    assert (
        core["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"]["x-kubernetes-patch-merge-key"]
        == "port"
    )
    assert (
        core["io.k8s.api.core.v1.Container"]["properties"]["ports"]["x-kubernetes-patch-merge-key"]
        == "containerPort"
    )
    assert core["io.k8s.api.core.v1.Container"]["required"] == ["name"]
    patch_op = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch_op["parameters"])
    v2 = cluster.http("GET", "/openapi/v2").json()
    assert v2["swagger"] == "2.0" and "io.k8s.api.apps.v1.Deployment" in v2["definitions"]


@pytest.mark.skipif(
    not (SHARED / "conformance/kubernetes/openapi-v2/swagger.json").exists(),
    reason="upstream swagger.json not found in ../shared",
)
def test_derived_schemas_agree_with_upstream_swagger(cluster: Cluster) -> None:
    """Field names and merge keys of the main kinds agree with the upstream 1.36 swagger."""
    upstream = json.loads((SHARED / "conformance/kubernetes/openapi-v2/swagger.json").read_text())[
        "definitions"
    ]
    ours = cluster.http("GET", "/openapi/v2").json()["definitions"]
    for name in (
        "io.k8s.api.apps.v1.DeploymentSpec",
        "io.k8s.api.core.v1.Container",
        "io.k8s.api.core.v1.PodSpec",
        "io.k8s.api.core.v1.ServiceSpec",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    ):
        up, mine = upstream[name]["properties"], ours[name]["properties"]
        assert set(up) - set(mine) <= {"hostnameOverride", "workloadRef"}, name  # small version skew allowed
        for field, spec in up.items():
            if "x-kubernetes-patch-merge-key" in spec and field in mine:
                assert (
                    mine[field].get("x-kubernetes-patch-merge-key") == spec["x-kubernetes-patch-merge-key"]
                ), f"{name}.{field}"


@needs_kubectl
def test_crd_adds_custom_resource_and_deleting_removes_it(cluster: Cluster) -> None:
    crd = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
"""
    cluster.kubectl("apply", "-f", "-", input=crd)
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input="apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n",
    )
    table = cluster.kubectl("get", "wd").stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "AGE"] and table[1].split()[:2] == ["w1", "3"]
    cluster.kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":5}}')
    assert cluster.kjson("get", "widget", "w1")["spec"]["size"] == 5
    smp = cluster.kubectl("patch", "widget", "w1", "-p", '{"spec":{"size":6}}', check=False)
    assert smp.returncode != 0 and "strategic" not in smp.stderr.split("include:")[-1]
    cluster.kubectl("delete", "crd", "widgets.example.com")
    gone = cluster.kubectl("get", "widgets.example.com", check=False)
    assert gone.returncode != 0


def test_deployment_fixture_is_valid_yaml() -> None:
    import yaml

    docs = list(yaml.safe_load_all(DEPLOYMENT))
    assert [d["kind"] for d in docs] == ["Deployment", "Service"]


@needs_kubectl
def test_custom_resources_are_validated_and_pruned_by_their_schema(cluster: Cluster) -> None:
    crd = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [mode]
            properties:
              mode: {type: string, enum: [fast, slow]}
              count: {type: integer, minimum: 0}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""
    cluster.kubectl("apply", "-f", "-", input=crd)
    bad = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {mode: warp, count: -1}\n"
    proc = cluster.kubectl("apply", "-f", "-", input=bad, check=False)
    assert proc.returncode != 0
    assert 'spec.mode: Unsupported value: "warp": supported values: "fast", "slow"' in proc.stderr
    assert (
        "spec.count: Invalid value: -1: spec.count in body should be greater than or equal to 0"
        in proc.stderr
    )
    typo = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {mode: fast, cuont: 1}\n"
    proc = cluster.kubectl("apply", "-f", "-", input=typo, check=False)
    assert 'unknown field "spec.cuont"' in proc.stderr
    cluster.kubectl("apply", "--validate=false", "-f", "-", input=typo)  # not strict: pruned silently
    assert cluster.kjson("get", "gadget", "g")["spec"] == {"mode": "fast"}
    ok = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: h}\nspec: {mode: slow, extra: {any: [1]}}\n"
    cluster.kubectl("apply", "-f", "-", input=ok)
    assert cluster.kjson("get", "gadget", "h")["spec"]["extra"] == {"any": [1]}
