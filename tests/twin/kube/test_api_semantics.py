"""API-server semantics the twin must share with a real kube-apiserver (issue 11): cluster-wide
collection writes, status vs the main resource, componentstatuses, `kubectl debug`, categories."""

from __future__ import annotations

import json

import pytest
import yaml
from kube_helpers import DEPLOYMENT, Cluster, needs_kubectl

pytestmark = [needs_kubectl, pytest.mark.kubectl]

JSON = {"Content-Type": "application/json"}


def _deploy(cluster: Cluster, seconds: float = 60) -> None:
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    cluster.advance(seconds)


def _install_chaos_crds(cluster: Cluster) -> None:
    from itbench_agents.twin.faults.chaos import chaos_crds

    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(chaos_crds()))
    cluster.kubectl("wait", "--for=condition=Established", "crd/podchaos.chaos-mesh.org", "--timeout=10s")


def _pods(cluster: Cluster) -> list[dict]:
    return cluster.kjson("get", "pods")["items"]  # type: ignore[no-any-return]


def test_cluster_wide_collection_writes_are_405(cluster: Cluster) -> None:
    _deploy(cluster)
    before = len(_pods(cluster))
    assert before == 2
    for path in ("/api/v1/pods", "/apis/apps/v1/deployments", "/api/v1/configmaps"):
        r = cluster.http("DELETE", path)
        assert r.status_code == 405, (path, r.text)
        body = r.json()
        assert body["reason"] == "MethodNotAllowed"
        assert body["message"] == "the server does not allow this method on the requested resource"
        assert cluster.http("POST", path, data="{}", headers=JSON).status_code == 405
    assert len(_pods(cluster)) == before
    assert cluster.kjson("get", "deploy")["items"]
    # listing across namespaces still works, and namespaced deletecollection is untouched
    assert cluster.http("GET", "/api/v1/pods").status_code == 200
    assert cluster.http("DELETE", "/api/v1/namespaces/default/configmaps").status_code == 200
    # cluster-scoped resources keep their collection delete
    assert (
        cluster.http("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses?labelSelector=x%3Dy").status_code
        == 200
    )


def test_patch_of_status_on_main_resource_is_ignored(cluster: Cluster) -> None:
    _deploy(cluster)
    pod = _pods(cluster)[0]["metadata"]["name"]
    out = cluster.kubectl("patch", "pod", pod, "-p", '{"status":{"phase":"Failed"}}').stdout
    assert "(no change)" in out
    cluster.advance(30)
    pods = _pods(cluster)
    assert [p["metadata"]["name"] for p in pods].count(pod) == 1 and len(pods) == 2
    assert all(p["status"]["phase"] == "Running" for p in pods)
    # merge and JSON patches, and PUT, alike
    cluster.kubectl("patch", "pod", pod, "--type=merge", "-p", '{"status":{"phase":"Failed"}}')
    cluster.kubectl(
        "patch", "pod", pod, "--type=json", "-p", '[{"op":"replace","path":"/status/phase","value":"Failed"}]'
    )
    obj = cluster.kjson("get", "pod", pod)
    obj["status"]["phase"] = "Succeeded"
    obj["metadata"]["labels"]["extra"] = "yes"
    cluster.kubectl("replace", "-f", "-", input=json.dumps(obj))
    got = cluster.kjson("get", "pod", pod)
    assert got["status"]["phase"] == "Running" and got["metadata"]["labels"]["extra"] == "yes"
    # deployments too: the status stays the controller's
    cluster.kubectl("patch", "deploy", "web", "--type=merge", "-p", '{"status":{"replicas":7}}')
    assert cluster.kjson("get", "deploy", "web")["status"]["replicas"] == 2


def test_status_subresource_writes_only_status(cluster: Cluster) -> None:
    _deploy(cluster)
    pod = _pods(cluster)[0]["metadata"]["name"]
    cluster.kubectl(
        "patch",
        "pod",
        pod,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"sneaky":"1"}},"spec":{"activeDeadlineSeconds":5},'
        '"status":{"message":"from status"}}',
    )
    got = cluster.kjson("get", "pod", pod)
    assert got["status"]["message"] == "from status"
    assert "sneaky" not in got["metadata"]["labels"] and "activeDeadlineSeconds" not in got["spec"]


def test_create_drops_status(cluster: Cluster) -> None:
    cm_like = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(cm_like))
    assert cluster.kjson("get", "svc", "s")["status"] == {"loadBalancer": {}}


def test_crd_status_subresource(cluster: Cluster) -> None:
    chaos = {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": "PodChaos",
        "metadata": {"name": "pc"},
        "spec": {"action": "pod-kill", "mode": "one", "selector": {"namespaces": ["default"]}},
        "status": {"experiment": {"desiredPhase": "Stop"}},
    }
    _install_chaos_crds(cluster)
    cluster.kubectl("create", "-f", "-", input=json.dumps(chaos))
    got = cluster.kjson("get", "podchaos", "pc")
    assert (got.get("status") or {}).get("experiment", {}).get("desiredPhase") != "Stop"
    cluster.kubectl(
        "patch", "podchaos", "pc", "--type=merge", "-p", '{"status":{"experiment":{"desiredPhase":"Stop"}}}'
    )
    got = cluster.kjson("get", "podchaos", "pc")
    assert (got.get("status") or {}).get("experiment", {}).get("desiredPhase") != "Stop"
    cluster.kubectl(
        "patch", "podchaos", "pc", "--subresource=status", "--type=merge", "-p", '{"status":{"x":"1"}}'
    )
    assert cluster.kjson("get", "podchaos", "pc")["status"]["x"] == "1"


def test_get_all_has_no_chaos_kinds(cluster: Cluster) -> None:
    from itbench_agents.twin.faults.chaos import chaos_crds

    for crd in chaos_crds():
        assert "categories" not in crd["spec"]["names"], crd["metadata"]["name"]
    _install_chaos_crds(cluster)
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "chaos-mesh.org/v1alpha1",
                "kind": "PodChaos",
                "metadata": {"name": "pc", "namespace": "default"},
                "spec": {"action": "pod-kill", "mode": "one", "selector": {"namespaces": ["default"]}},
            }
        ),
    )
    out = cluster.kubectl("get", "all").stdout + cluster.kubectl("get", "all").stderr
    assert "podchaos" not in out.lower()
    assert "pc" in cluster.kubectl("get", "podchaos").stdout


def test_componentstatuses(cluster: Cluster) -> None:
    proc = cluster.kubectl("get", "cs")
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows == {
        "scheduler": ["Healthy", "ok"],
        "controller-manager": ["Healthy", "ok"],
        "etcd-0": ["Healthy", '{"health":"true","reason":""}'],
    }
    assert "v1 ComponentStatus is deprecated in v1.19+" in proc.stderr
    one = cluster.kjson("get", "componentstatus", "etcd-0")
    assert one["kind"] == "ComponentStatus" and one["conditions"][0]["type"] == "Healthy"
    assert cluster.kubectl("get", "cs", "nope", check=False).returncode != 0
    assert cluster.http("DELETE", "/api/v1/componentstatuses/scheduler").status_code == 405


def test_kubectl_debug_gets_a_clear_message(cluster: Cluster) -> None:
    _deploy(cluster)
    pod = _pods(cluster)[0]["metadata"]["name"]
    proc = cluster.kubectl("debug", pod, "--image=busybox", "--target=web", "--", "true", check=False)
    assert proc.returncode != 0
    assert "ephemeral containers (kubectl debug) are not supported by the itbench twin" in proc.stderr
    assert "MethodNotAllowed" not in proc.stderr
    r = cluster.http("GET", f"/api/v1/namespaces/default/pods/{pod}/ephemeralcontainers")
    assert r.status_code == 200 and r.json()["kind"] == "Pod"
