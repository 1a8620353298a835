"""The real kubectl against the twin: apply/create/get/patch/label/scale/delete behave as on a cluster."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from kube_helpers import DEPLOYMENT, KUBECTL, Cluster, needs_kubectl

pytestmark = [needs_kubectl, pytest.mark.kubectl]


def test_apply_creates_then_is_unchanged_and_get_prints_real_columns(cluster: Cluster) -> None:
    out = cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT).stdout
    assert "deployment.apps/web created" in out and "service/web created" in out
    again = cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT).stdout
    assert "deployment.apps/web unchanged" in again and "service/web unchanged" in again
    table = cluster.kubectl("get", "deploy", "-o", "wide").stdout.splitlines()
    assert table[0].split() == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert table[1].split()[0] == "web" and "nginx:1.25" in table[1] and "app=web" in table[1]
    svc = cluster.kubectl("get", "svc", "web").stdout.splitlines()
    assert svc[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert svc[1].split()[1] == "ClusterIP" and svc[1].split()[4] == "80/TCP"
    assert svc[1].split()[2].startswith("10.96.")


def test_apply_change_updates_generation_and_keeps_last_applied(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    changed = DEPLOYMENT.replace("nginx:1.25", "nginx:1.26").replace("replicas: 2", "replicas: 3")
    assert "deployment.apps/web configured" in cluster.kubectl("apply", "-f", "-", input=changed).stdout
    dep = cluster.kjson("get", "deploy", "web")
    assert dep["spec"]["replicas"] == 3
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert dep["metadata"]["generation"] == 2
    assert "kubectl.kubernetes.io/last-applied-configuration" in dep["metadata"]["annotations"]
    # removing env from the manifest removes it from the object (3-way merge with the real merge keys)
    no_env = changed.replace('        env: [{name: A, value: "1"}]\n', "")
    cluster.kubectl("apply", "-f", "-", input=no_env)
    dep = cluster.kjson("get", "deploy", "web")
    assert "env" not in dep["spec"]["template"]["spec"]["containers"][0]


def test_create_validates_and_reports_unknown_fields(cluster: Cluster) -> None:
    bad = DEPLOYMENT.split("---")[0].replace("  replicas: 2\n", "  replicas: 2\n  replicaz: 3\n")
    proc = cluster.kubectl("create", "-f", "-", input=bad, check=False)
    assert proc.returncode != 0
    assert 'strict decoding error: unknown field "spec.replicaz"' in proc.stderr
    cluster.kubectl("create", "-f", "-", input=DEPLOYMENT)
    dup = cluster.kubectl("create", "-f", "-", input=DEPLOYMENT, check=False)
    assert 'deployments.apps "web" already exists' in dup.stderr


def test_invalid_object_gets_422_with_field_causes(cluster: Cluster) -> None:
    bad = (
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"replicas":-1,'
        '"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"c"}},'
        '"spec":{"containers":[{"name":"c"}]}}}}'
    )
    proc = cluster.kubectl("create", "-f", "-", input=bad, check=False)
    assert proc.returncode != 0
    err = proc.stderr
    assert 'The Deployment "x" is invalid' in err
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in err
    assert "spec.template.spec.containers[0].image: Required value" in err
    assert "`selector` does not match template `labels`" in err
    bad_name = DEPLOYMENT.split("---")[0].replace("name: web\n  labels", "name: Web_1\n  labels")
    proc = cluster.kubectl("create", "-f", "-", input=bad_name, check=False)
    assert 'metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain' in proc.stderr


def test_label_annotate_scale_set_image_set_env(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    assert "labeled" in cluster.kubectl("label", "deploy", "web", "tier=frontend").stdout
    assert "annotated" in cluster.kubectl("annotate", "deploy", "web", "owner=sre").stdout
    assert "scaled" in cluster.kubectl("scale", "deploy", "web", "--replicas=5").stdout
    assert "image updated" in cluster.kubectl("set", "image", "deploy/web", "web=nginx:1.27").stdout
    assert "env updated" in cluster.kubectl("set", "env", "deploy/web", "B=2").stdout
    dep = cluster.kjson("get", "deploy", "web")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert dep["metadata"]["labels"] == {"app": "web", "tier": "frontend"}
    assert dep["metadata"]["annotations"]["owner"] == "sre"
    assert dep["spec"]["replicas"] == 5
    assert c["image"] == "nginx:1.27"
    assert c["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert (
        cluster.kubectl("get", "deploy", "-l", "tier=frontend", "-o", "name").stdout.strip()
        == "deployment.apps/web"
    )
    assert cluster.kubectl("get", "deploy", "-l", "tier notin (frontend)", "-o", "name").stdout.strip() == ""
    cluster.kubectl("label", "deploy", "web", "tier-")
    assert "tier" not in cluster.kjson("get", "deploy", "web")["metadata"]["labels"]


def test_patch_strategic_merge_json_merge_and_json_patch(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    # strategic: containers merge by name, env by name
    cluster.kubectl(
        "patch",
        "deploy",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"C","value":"3"}]}]}}}}',
    )
    c = cluster.kjson("get", "deploy", "web")["spec"]["template"]["spec"]["containers"]
    assert len(c) == 1 and [e["name"] for e in c[0]["env"]] == ["A", "C"] and c[0]["image"] == "nginx:1.25"
    # $patch: delete removes one list element by merge key
    cluster.kubectl(
        "patch",
        "deploy",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","$patch":"delete"}]}]}}}}',
    )
    c = cluster.kjson("get", "deploy", "web")["spec"]["template"]["spec"]["containers"]
    assert [e["name"] for e in c[0]["env"]] == ["C"]
    # JSON merge patch replaces lists wholesale
    cluster.kubectl("patch", "deploy", "web", "--type=merge", "-p", '{"spec":{"minReadySeconds":7}}')
    # JSON patch
    cluster.kubectl(
        "patch", "deploy", "web", "--type=json", "-p", '[{"op":"replace","path":"/spec/replicas","value":4}]'
    )
    dep = cluster.kjson("get", "deploy", "web")
    assert dep["spec"]["minReadySeconds"] == 7 and dep["spec"]["replicas"] == 4
    bad = cluster.kubectl(
        "patch", "deploy", "web", "--type=json", "-p", '[{"op":"remove","path":"/spec/nope"}]', check=False
    )
    assert bad.returncode != 0 and "nope" in bad.stderr
    # service ports merge by port, not containerPort
    cluster.kubectl("patch", "svc", "web", "-p", '{"spec":{"ports":[{"port":80,"targetPort":8080}]}}')
    ports = cluster.kjson("get", "svc", "web")["spec"]["ports"]
    assert len(ports) == 1 and ports[0]["targetPort"] == 8080


def test_dry_run_does_not_persist(cluster: Cluster) -> None:
    out = cluster.kubectl("apply", "-f", "-", "--dry-run=server", input=DEPLOYMENT).stdout
    assert "created (server dry run)" in out
    assert cluster.kubectl("get", "deploy", "-o", "name").stdout.strip() == ""
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    cluster.kubectl("scale", "deploy", "web", "--replicas=9", "--dry-run=server")
    assert cluster.kjson("get", "deploy", "web")["spec"]["replicas"] == 2
    cluster.kubectl("delete", "deploy", "web", "--dry-run=server")
    assert cluster.kjson("get", "deploy", "web")["metadata"]["name"] == "web"


def test_delete_cascade_orphan_strips_owner_references(cluster: Cluster) -> None:
    owner = cluster.twin.apply(
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default"}}]
    )[0]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    cluster.twin.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "child", "namespace": "default", "ownerReferences": [ref]},
            }
        ]
    )
    assert "deleted" in cluster.kubectl("delete", "configmap", "owner", "--cascade=orphan").stdout
    child = cluster.kjson("get", "configmap", "child")
    assert "ownerReferences" not in child["metadata"]
    proc = cluster.kubectl("get", "configmap", "owner", check=False)
    assert 'configmaps "owner" not found' in proc.stderr


def test_delete_by_label_and_namespace_lifecycle(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "team-a", check=False)  # protobuf body: may be refused
    if cluster.kubectl("get", "ns", "team-a", check=False).returncode != 0:
        cluster.kubectl(
            "apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n"
        )
    for n in ("a", "b", "c"):
        cluster.kubectl(
            "apply",
            "-n",
            "team-a",
            "-f",
            "-",
            input=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, labels: {{grp: x}}}}\n"
            "data: {k: v}\n",
        )
    lines = cluster.kubectl("get", "cm", "-n", "team-a", "-l", "grp=x").stdout.splitlines()
    assert lines[0].split() == ["NAME", "DATA", "AGE"] and [r.split()[:2] for r in lines[1:]] == [
        ["a", "1"],
        ["b", "1"],
        ["c", "1"],
    ]
    cluster.kubectl("delete", "cm", "-n", "team-a", "-l", "grp=x")
    assert cluster.kubectl("get", "cm", "-n", "team-a", "-l", "grp", "-o", "name").stdout.strip() == ""
    cluster.kubectl("delete", "ns", "team-a")
    assert cluster.kubectl("get", "ns", "team-a", check=False).returncode != 0
    missing = cluster.kubectl(
        "apply",
        "-n",
        "nowhere",
        "-f",
        "-",
        input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z}\n",
        check=False,
    )
    assert 'namespaces "nowhere" not found' in missing.stderr


def test_get_watch_streams_changes(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    proc = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "get",
            "deploy",
            "web",
            "-w",
            "--output-watch-events",
            "--request-timeout=4s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    cluster.kubectl("annotate", "deploy", "web", "step=1")
    cluster.kubectl("scale", "deploy", "web", "--replicas=3")
    out, _ = proc.communicate(timeout=15)
    events = [line.split()[0] for line in out.splitlines() if line.strip() and not line.startswith("EVENT")]
    assert events[0] == "ADDED"
    assert events.count("MODIFIED") >= 2


def test_get_output_formats_and_field_selectors(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    names = cluster.kubectl(
        "get", "svc", "-A", "--field-selector", "metadata.namespace=default", "-o", "name"
    ).stdout
    assert names.split() == ["service/kubernetes", "service/web"]
    y = cluster.kubectl("get", "svc", "web", "-o", "yaml").stdout
    assert "kind: Service" in y and "clusterIP:" in y
    jp = cluster.kubectl(
        "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].name}"
    ).stdout
    assert jp == "web"
    bad = cluster.kubectl("get", "pods", "--field-selector", "spec.bogus=x", check=False)
    assert "field label not supported: spec.bogus" in bad.stderr
    nodes = cluster.kubectl("get", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"] and len(nodes) == 4
    listed = json.loads(cluster.kubectl("get", "--raw", "/api/v1/namespaces?limit=2").stdout)
    assert len(listed["items"]) == 2 and listed["metadata"]["continue"]
    rest = json.loads(
        cluster.kubectl(
            "get", "--raw", f"/api/v1/namespaces?limit=10&continue={listed['metadata']['continue']}"
        ).stdout
    )
    all_ns = {i["metadata"]["name"] for i in listed["items"] + rest["items"]}
    assert {"default", "kube-system"} <= all_ns and len(all_ns) == 2 + len(rest["items"])


def test_exec_port_forward_and_attach_fail_fast(cluster: Cluster) -> None:
    cluster.twin.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
        ]
    )
    t0 = time.monotonic()
    proc = cluster.kubectl("exec", "p", "--", "ls", check=False, timeout=20)
    assert proc.returncode != 0 and "not supported by the itbench twin" in proc.stderr
    proc = cluster.kubectl("port-forward", "pod/p", "18080:80", check=False, timeout=20)
    assert proc.returncode != 0
    assert time.monotonic() - t0 < 20


def test_server_side_apply_is_approximated_by_a_merge(cluster: Cluster) -> None:
    out = cluster.kubectl("apply", "--server-side", "-f", "-", input=DEPLOYMENT).stdout
    assert "deployment.apps/web serverside-applied" in out
    changed = DEPLOYMENT.replace("nginx:1.25", "nginx:1.26")
    cluster.kubectl("apply", "--server-side", "-f", "-", input=changed)
    dep = cluster.kjson("get", "deploy", "web")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert dep["metadata"]["generation"] == 2
