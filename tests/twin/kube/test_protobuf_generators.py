"""kubectl's typed generators send protobuf bodies; the twin reads the kinds they create."""

from __future__ import annotations

import pytest
from kube_helpers import Cluster, needs_kubectl

pytestmark = [needs_kubectl, pytest.mark.kubectl]


def test_create_namespace_configmap_secret_sa_quota(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "team-x")
    assert cluster.kjson("get", "ns", "team-x")["metadata"]["labels"] == {
        "kubernetes.io/metadata.name": "team-x"
    }
    cluster.kubectl("create", "configmap", "c1", "--from-literal=a=b", "--from-literal=c=d", "-n", "team-x")
    assert cluster.kjson("get", "cm", "c1", "-n", "team-x")["data"] == {"a": "b", "c": "d"}
    cluster.kubectl("create", "secret", "generic", "s1", "--from-literal=pw=hunter2")
    s = cluster.kjson("get", "secret", "s1")
    assert s["data"] == {"pw": "aHVudGVyMg=="} and s["type"] == "Opaque"
    cluster.kubectl("create", "serviceaccount", "robot")
    assert cluster.kjson("get", "sa", "robot")["metadata"]["name"] == "robot"
    cluster.kubectl("create", "quota", "q1", "--hard=pods=10,cpu=2")
    assert cluster.kjson("get", "quota", "q1")["spec"]["hard"] == {"cpu": "2", "pods": "10"}


def test_create_deployment_expose_run_and_job(cluster: Cluster) -> None:
    cluster.kubectl("create", "deployment", "d1", "--image=nginx:1.25", "--replicas=2", "--port=80")
    d = cluster.kjson("get", "deploy", "d1")
    assert d["spec"]["replicas"] == 2 and d["spec"]["selector"] == {"matchLabels": {"app": "d1"}}
    assert d["spec"]["strategy"]["type"] == "RollingUpdate"
    c = d["spec"]["template"]["spec"]["containers"][0]
    assert (c["name"], c["image"], c["ports"]) == (
        "nginx",
        "nginx:1.25",
        [{"containerPort": 80, "protocol": "TCP"}],
    )
    assert "generation" not in d["spec"]["template"]["metadata"] and "stdin" not in c
    cluster.kubectl("expose", "deploy", "d1", "--port=8080", "--target-port=80")
    svc = cluster.kjson("get", "svc", "d1")["spec"]
    assert svc["ports"] == [{"port": 8080, "protocol": "TCP", "targetPort": 80}] and svc["selector"] == {
        "app": "d1"
    }
    cluster.kubectl("run", "p1", "--image=busybox", "--env=A=1", "--labels=x=y", "--", "sleep", "10")
    pod = cluster.kjson("get", "pod", "p1")
    assert pod["metadata"]["labels"] == {"x": "y"}
    assert pod["spec"]["containers"][0]["args"] == ["sleep", "10"]
    assert pod["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    cluster.kubectl("create", "job", "j1", "--image=busybox", "--", "echo", "hi")
    job = cluster.kjson("get", "job", "j1")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]


def test_unknown_protobuf_kind_gets_a_clear_415(cluster: Cluster) -> None:
    proc = cluster.kubectl("create", "priorityclass", "high", "--value=1000", check=False)
    assert proc.returncode != 0 and "send it as JSON or YAML" in proc.stderr


def test_autoscale_creates_a_v1_hpa_served_as_v2_too(cluster: Cluster) -> None:
    cluster.kubectl("create", "deployment", "web", "--image=nginx")
    cluster.kubectl("autoscale", "deploy", "web", "--min=2", "--max=5", "--cpu-percent=60")
    v2 = cluster.kjson("get", "horizontalpodautoscalers.v2.autoscaling", "web")
    assert v2["apiVersion"] == "autoscaling/v2" and v2["spec"]["minReplicas"] == 2
    assert v2["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
        }
    ]
    v1 = cluster.kjson("get", "horizontalpodautoscalers.v1.autoscaling", "web")
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 60
    cluster.kubectl(
        "patch",
        "horizontalpodautoscalers.v1.autoscaling",
        "web",
        "-p",
        '{"spec":{"targetCPUUtilizationPercentage":75}}',
    )
    assert (
        cluster.kjson("get", "hpa", "web")["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"]
        == 75
    )
    row = cluster.kubectl("get", "hpa", "web").stdout.splitlines()
    assert row[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert row[1].split()[1] == "Deployment/web"
