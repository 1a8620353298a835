"""Graceful deletion as on a real cluster: pods show Terminating while the kubelet stops them,
namespaces show phase Terminating while their content goes, a terminating namespace refuses new
content. The twin runs on a ManualClock here, so "while" is the time before ``advance``."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
from kube_helpers import DEPLOYMENT, KUBECTL, Cluster, needs_kubectl, serve_cluster

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.k8s.times import parse_rfc3339
from itbench_agents.twin.clock import VirtualClock
from itbench_agents.twin.instance import Twin

pytestmark = [needs_kubectl, pytest.mark.kubectl]

PODS = GroupResource("", "pods")
NAMESPACES = GroupResource("", "namespaces")


def _deploy(cluster: Cluster, ns: str = "default") -> list[str]:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=DEPLOYMENT)
    cluster.advance(60)
    return sorted(cluster.kubectl("get", "pods", "-n", ns, "-o", "name").stdout.split())


def _status_of(cluster: Cluster, ns: str = "default") -> dict[str, str]:
    lines = cluster.kubectl("get", "pods", "-n", ns).stdout.splitlines()
    return {r.split()[0]: r.split()[2] for r in lines[1:]}


def test_deleted_pod_is_terminating_then_gone_and_replaced_at_once(cluster: Cluster) -> None:
    first, second = _deploy(cluster)
    name = first.split("/")[1]
    out = cluster.kubectl("delete", first, "--wait=false").stdout
    assert out.strip() == f'pod "{name}" deleted'
    pod = cluster.kjson("get", first)
    meta = pod["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    assert parse_rfc3339(meta["deletionTimestamp"]) == pytest.approx(cluster.twin.now() + 30, abs=1)
    status = _status_of(cluster)
    assert status[name] == "Terminating" and status[second.split("/")[1]] == "Running"
    # the ReplicaSet does not count a terminating pod: the replacement exists already
    assert len(status) == 3
    # the Service's endpoints no longer send traffic to it
    ep = cluster.kjson("get", "endpoints", "web")
    ready_ips = {a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []}
    assert pod["status"].get("podIP") not in ready_ips
    reasons = cluster.kubectl(
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name={name}",
        "-o",
        "jsonpath={.items[*].reason}",
    ).stdout.split()
    assert "Killing" in reasons
    cluster.advance(2)
    status = _status_of(cluster)
    assert name not in status and list(status.values()) == ["Running", "Running"]


def test_force_delete_removes_the_pod_at_once(cluster: Cluster) -> None:
    first, _ = _deploy(cluster)
    proc = cluster.kubectl("delete", first, "--grace-period=0", "--force")
    assert "Immediate deletion does not wait for confirmation" in proc.stderr
    assert "force deleted" in proc.stdout
    missing = cluster.kubectl("get", first, check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr


def test_grace_period_from_the_request_and_from_the_pod_spec(cluster: Cluster) -> None:
    first, second = _deploy(cluster)
    cluster.kubectl("delete", first, "--grace-period=5", "--wait=false")
    assert cluster.kjson("get", first)["metadata"]["deletionGracePeriodSeconds"] == 5
    r = cluster.http("DELETE", f"/api/v1/namespaces/default/{second.replace('/', 's/')}")
    assert r.status_code == 200 and r.json()["kind"] == "Pod"
    assert r.json()["metadata"]["deletionGracePeriodSeconds"] == 30
    again = cluster.http(
        "DELETE",
        f"/api/v1/namespaces/default/{second.replace('/', 's/')}",
        params={"gracePeriodSeconds": "x"},
    )
    assert again.status_code == 400 and again.json()["reason"] == "BadRequest"


def test_deleting_a_deployment_leaves_its_pods_terminating_for_a_moment(cluster: Cluster) -> None:
    _deploy(cluster)
    cluster.kubectl("delete", "deploy", "web", "--wait=false")
    assert cluster.kubectl("get", "deploy,rs", "-o", "name").stdout.strip() == ""
    assert list(_status_of(cluster).values()) == ["Terminating", "Terminating"]
    cluster.advance(2)
    assert cluster.kubectl("get", "pods", "-o", "name").stdout.strip() == ""


def test_a_finalizer_holds_a_stopped_pod_until_removed(cluster: Cluster) -> None:
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input="apiVersion: v1\nkind: Pod\nmetadata: {name: held, finalizers: [example.com/hold]}\n"
        "spec:\n  containers: [{name: c, image: nginx}]\n",
    )
    cluster.advance(30)
    cluster.kubectl("delete", "pod", "held", "--wait=false")
    cluster.advance(5)
    pod = cluster.kjson("get", "pod", "held")
    assert pod["metadata"]["deletionTimestamp"] and _status_of(cluster)["held"] == "Terminating"
    assert [c["state"].get("terminated", {}).get("exitCode") for c in pod["status"]["containerStatuses"]] == [
        143
    ]
    cluster.kubectl("patch", "pod", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert cluster.kubectl("get", "pod", "held", check=False).returncode != 0


def test_unscheduled_pod_is_deleted_at_once(cluster: Cluster) -> None:
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input="apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n  containers:\n"
        "  - {name: c, image: nginx, resources: {requests: {cpu: '500'}}}\n",
    )
    cluster.advance(5)
    assert _status_of(cluster)["big"] == "Pending"
    cluster.kubectl("delete", "pod", "big", "--wait=false")
    assert cluster.kubectl("get", "pod", "big", check=False).returncode != 0


def test_namespace_terminating_refuses_content_then_goes(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n")
    _deploy(cluster, "team-b")
    cluster.kubectl("delete", "ns", "team-b", "--wait=false")
    ns = cluster.kjson("get", "ns", "team-b")
    assert ns["status"]["phase"] == "Terminating" and ns["metadata"]["deletionTimestamp"]
    row = cluster.kubectl("get", "ns", "team-b").stdout.splitlines()[1].split()
    assert row[:2] == ["team-b", "Terminating"]
    refused = cluster.kubectl(
        "create", "configmap", "late", "-n", "team-b", "--from-literal=k=v", check=False
    )
    assert refused.returncode != 0
    assert (
        'configmaps "late" is forbidden: unable to create new content in namespace team-b because it '
        "is being terminated" in refused.stderr
    )
    r = cluster.http(
        "POST",
        "/api/v1/namespaces/team-b/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}},
    )
    assert r.status_code == 403 and r.json()["reason"] == "Forbidden"
    # its pods stop gracefully, the rest is gone already
    assert set(_status_of(cluster, "team-b").values()) == {"Terminating"}
    assert cluster.kubectl("get", "deploy,rs,svc", "-n", "team-b", "-o", "name").stdout.strip() == ""
    cluster.advance(5)
    gone = cluster.kubectl("get", "ns", "team-b", check=False)
    assert gone.returncode != 0 and 'namespaces "team-b" not found' in gone.stderr


def test_a_namespace_with_finalizers_of_its_own_stays_terminating_until_they_are_removed(
    cluster: Cluster,
) -> None:
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input="apiVersion: v1\nkind: Namespace\nmetadata: {name: team-c, finalizers: [example.com/hold]}\n",
    )
    _deploy(cluster, "team-c")
    cluster.kubectl("delete", "ns", "team-c", "--wait=false")
    cluster.advance(60)
    assert cluster.kubectl("get", "all", "-n", "team-c", "-o", "name").stdout.strip() == ""
    ns = cluster.kjson("get", "ns", "team-c")
    assert ns["status"]["phase"] == "Terminating" and ns["metadata"]["finalizers"] == ["example.com/hold"]
    cluster.kubectl("patch", "ns", "team-c", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    gone = cluster.kubectl("get", "ns", "team-c", check=False)
    assert gone.returncode != 0 and 'namespaces "team-c" not found' in gone.stderr


def test_content_a_finalizer_holds_keeps_its_namespace_terminating_saying_what_remains(
    cluster: Cluster,
) -> None:
    cluster.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: team-d}\n")
    _deploy(cluster, "team-d")
    held = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: team-d, finalizers: [example.com/hold]}\n"
    cluster.kubectl("apply", "-f", "-", input=held)
    cluster.kubectl("delete", "ns", "team-d", "--wait=false")
    cluster.advance(60)
    assert cluster.kubectl("get", "all", "-n", "team-d", "-o", "name").stdout.strip() == ""
    cm = cluster.kjson("get", "configmap", "held", "-n", "team-d")
    assert cm["metadata"]["deletionTimestamp"]  # marked, held by its finalizer
    ns = cluster.kjson("get", "ns", "team-d")
    assert ns["status"]["phase"] == "Terminating" and ns["spec"]["finalizers"] == ["kubernetes"]
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in ns["status"]["conditions"]}
    assert conditions["NamespaceContentRemaining"] == (
        "True",
        "SomeResourcesRemain",
        "Some resources are remaining: configmaps. has 1 resource instances",
    )
    assert conditions["NamespaceFinalizersRemaining"] == (
        "True",
        "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
    )
    assert conditions["NamespaceDeletionDiscoveryFailure"] == (
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    )
    cluster.kubectl(
        "patch", "configmap", "held", "-n", "team-d", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    cluster.advance(1)
    gone = cluster.kubectl("get", "ns", "team-d", check=False)
    assert gone.returncode != 0 and 'namespaces "team-d" not found' in gone.stderr


def test_system_namespaces_may_not_be_deleted(cluster: Cluster) -> None:
    proc = cluster.kubectl("delete", "ns", "kube-system", check=False)
    assert proc.returncode != 0
    assert 'namespaces "kube-system" is forbidden: this namespace may not be deleted' in proc.stderr


def test_kubectl_delete_waits_and_a_concurrent_get_sees_terminating(tmp_path: Path) -> None:
    """On the wall clock (as `itbench twin serve` runs), `kubectl delete pod` returns once the
    kubelet removed the pod; a `get -w` during it sees the Terminating row."""
    twin = Twin(seed=7, clock=VirtualClock())
    stop = threading.Event()

    def tick() -> None:  # what Twin.serve's ticker does
        while not stop.wait(0.1):
            twin.sync()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        for cluster in serve_cluster(twin, tmp_path):
            cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
            cluster.kubectl("rollout", "status", "deploy/web", "--timeout=30s", timeout=40)
            pod = sorted(cluster.kubectl("get", "pods", "-o", "name").stdout.split())[0]
            name = pod.split("/")[1]
            watch = subprocess.Popen(
                [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "get", pod, "-w", "--request-timeout=20s"],
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                assert watch.stdout is not None
                assert watch.stdout.readline().split()[0] == "NAME"
                assert watch.stdout.readline().split()[:3] == [name, "1/1", "Running"]
                out = cluster.kubectl("delete", pod, timeout=20).stdout
                assert out.strip() == f'pod "{name}" deleted'
                assert cluster.twin.get(PODS, "default", name) is None
                seen = [watch.stdout.readline().split()[:3] for _ in range(2)]
                assert [name, "1/1", "Terminating"] in seen or [name, "0/1", "Terminating"] in seen
            finally:
                watch.kill()
                watch.wait()
    finally:
        stop.set()
        ticker.join()
