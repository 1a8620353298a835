"""kubectl against running workloads (needs the twin's controllers): pods, rollouts, logs, top, describe."""

from __future__ import annotations

import json
import threading
import time

import pytest
from kube_helpers import DEPLOYMENT, Cluster, needs_kubectl

pytestmark = [needs_kubectl, pytest.mark.kubectl]


def _deploy(cluster: Cluster, seconds: float = 60) -> None:
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    cluster.advance(seconds)


def test_get_pods_columns_and_wide(cluster: Cluster) -> None:
    _deploy(cluster)
    lines = cluster.kubectl("get", "pods", "-o", "wide").stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    rows = [r.split() for r in lines[1:]]
    assert len(rows) == 2
    for r in rows:
        assert r[0].startswith("web-") and r[1:4] == ["1/1", "Running", "0"]
        assert r[6].startswith("twin-") or r[6] != "<none>"
    all_ns = cluster.kubectl("get", "pods", "-A").stdout.splitlines()
    assert all_ns[0].split()[:2] == ["NAMESPACE", "NAME"] and all_ns[1].split()[0] == "default"
    rs = cluster.kubectl("get", "rs").stdout.splitlines()
    assert rs[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"] and rs[1].split()[1:4] == [
        "2",
        "2",
        "2",
    ]
    dep = cluster.kubectl("get", "deploy", "web").stdout.splitlines()[1].split()
    assert dep[1:4] == ["2/2", "2", "2"]


def test_rollout_status_history_undo_restart(cluster: Cluster) -> None:
    _deploy(cluster)
    out = cluster.kubectl("rollout", "status", "deploy/web", "--timeout=10s").stdout
    assert 'deployment "web" successfully rolled out' in out
    cluster.kubectl("set", "image", "deploy/web", "web=nginx:1.26")
    cluster.advance(120)
    hist = cluster.kubectl("rollout", "history", "deploy/web").stdout
    assert "REVISION" in hist and "1 " in hist and "2 " in hist
    assert (
        cluster.kjson("get", "deploy", "web")["spec"]["template"]["spec"]["containers"][0]["image"]
        == "nginx:1.26"
    )
    assert "rolled back" in cluster.kubectl("rollout", "undo", "deploy/web").stdout
    cluster.advance(120)
    dep = cluster.kjson("get", "deploy", "web")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert "restarted" in cluster.kubectl("rollout", "restart", "deploy/web").stdout
    dep = cluster.kjson("get", "deploy", "web")
    assert "kubectl.kubernetes.io/restartedAt" in dep["spec"]["template"]["metadata"]["annotations"]
    cluster.advance(120)
    out = cluster.kubectl("rollout", "status", "deploy/web", "--timeout=10s").stdout
    assert "successfully rolled out" in out


def test_describe_pod_lists_events(cluster: Cluster) -> None:
    _deploy(cluster)
    pod = cluster.kubectl("get", "pods", "-o", "name").stdout.split()[0]
    desc = cluster.kubectl("describe", pod).stdout
    assert "Status:           Running" in desc or "Status:       Running" in desc or "Running" in desc
    assert "Events:" in desc and "Scheduled" in desc and "Started" in desc
    ev = cluster.kubectl("get", "events").stdout.splitlines()
    assert ev[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any("ScalingReplicaSet" in line for line in ev)


def test_logs_come_from_the_log_source_with_options(cluster: Cluster) -> None:
    _deploy(cluster)
    pod = cluster.kubectl("get", "pods", "-o", "name").stdout.split()[0].split("/")[1]
    assert cluster.kubectl("logs", pod).stdout == ""  # no telemetry installed: no output, no error
    calls: list[tuple] = []

    class Logs:
        def pod_log(
            self,
            namespace: str,
            pod: str,
            container: str,
            *,
            previous: bool = False,
            since_time: float | None = None,
            tail_lines: int | None = None,
            timestamps: bool = False,
        ) -> str:
            calls.append((namespace, pod, container, previous, tail_lines, timestamps))
            if previous:
                raise LookupError(f'previous terminated container "{container}" in pod "{pod}" not found')
            return "line1\nline2\n"

    cluster.twin.logs = Logs()  # type: ignore[assignment]
    assert cluster.kubectl("logs", pod, "--tail=2", "--timestamps").stdout == "line1\nline2\n"
    assert calls[-1] == ("default", pod, "web", False, 2, True)
    prev = cluster.kubectl("logs", pod, "--previous", check=False)
    assert prev.returncode != 0 and "previous terminated container" in prev.stderr
    bad = cluster.kubectl("logs", pod, "-c", "nope", check=False)
    assert "container nope is not valid for pod" in bad.stderr
    assert cluster.kubectl("logs", "-f", pod, timeout=10).stdout == "line1\nline2\n"
    assert "line1" in cluster.kubectl("logs", "deploy/web").stdout


def test_top_pods_and_nodes(cluster: Cluster) -> None:
    _deploy(cluster)
    pods = cluster.kubectl("top", "pods").stdout.splitlines()
    assert pods[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"] and len(pods) == 3
    assert pods[1].split()[1] == "50m" and pods[1].split()[2] == "32Mi"  # DefaultRuntime: half the request
    nodes = cluster.kubectl("top", "nodes").stdout.splitlines()
    assert nodes[0].split()[:3] == ["NAME", "CPU(cores)", "CPU(%)"] and len(nodes) == 4
    raw = json.loads(
        cluster.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods").stdout
    )
    assert raw["kind"] == "PodMetricsList" and raw["items"][0]["containers"][0]["name"] == "web"


def test_delete_pod_is_replaced_and_deployment_delete_cascades(cluster: Cluster) -> None:
    _deploy(cluster)
    pod = cluster.kubectl("get", "pods", "-o", "name").stdout.split()[0]
    cluster.kubectl("delete", pod, "--wait=false")
    cluster.advance(30)
    pods = cluster.kubectl("get", "pods", "-o", "name").stdout.split()
    assert pod not in pods and len(pods) == 2
    cluster.kubectl("delete", "deploy", "web", "--wait=false")
    cluster.advance(30)
    assert cluster.kubectl("get", "rs,pods", "-o", "name").stdout.strip() == ""


def test_scale_to_zero_and_back(cluster: Cluster) -> None:
    _deploy(cluster)
    cluster.kubectl("scale", "deploy/web", "--replicas=0")
    cluster.advance(60)
    assert cluster.kubectl("get", "pods", "-o", "name").stdout.strip() == ""
    cluster.kubectl("scale", "deploy/web", "--replicas=3")
    cluster.advance(60)
    assert len(cluster.kubectl("get", "pods", "-o", "name").stdout.split()) == 3


def test_drain_evicts_and_cordons(cluster: Cluster) -> None:
    _deploy(cluster)
    pods = cluster.kjson("get", "pods")["items"]
    node = pods[0]["spec"]["nodeName"]
    # drain waits until the evicted pods are gone (Terminating until their kubelet stops them):
    # the manual clock moves on while it waits
    result: dict[str, str] = {}
    drain = threading.Thread(
        target=lambda: result.update(
            out=cluster.kubectl("drain", node, "--ignore-daemonsets", "--timeout=20s", timeout=40).stdout
        )
    )
    drain.start()
    while drain.is_alive():
        time.sleep(0.2)
        cluster.advance(0.5)
    out = result["out"]
    assert f"node/{node} cordoned" in out and "evicted" in out and f"node/{node} drained" in out
    assert "SchedulingDisabled" in cluster.kubectl("get", "node", node).stdout
    cluster.advance(30)
    now = cluster.kjson("get", "pods")["items"]
    assert len(now) == 2 and all(p["spec"]["nodeName"] != node for p in now)
    cluster.kubectl("uncordon", node)


PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
"""


def test_a_disruption_budget_holds_a_drain_back(cluster: Cluster) -> None:
    _deploy(cluster)
    cluster.kubectl("apply", "-f", "-", input=PDB)
    cluster.advance(1)
    row = cluster.kubectl("get", "pdb", "web").stdout.splitlines()[1].split()
    assert row[:4] == ["web", "2", "N/A", "0"]  # MIN AVAILABLE, MAX UNAVAILABLE, ALLOWED DISRUPTIONS
    node = cluster.kjson("get", "pods")["items"][0]["spec"]["nodeName"]
    drain = cluster.kubectl("drain", node, "--ignore-daemonsets", "--timeout=3s", check=False, timeout=30)
    assert drain.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in drain.stderr, drain.stderr
    assert len(cluster.kjson("get", "pods")["items"]) == 2  # nothing was evicted
    cluster.kubectl("uncordon", node)
    cluster.kubectl("scale", "deploy/web", "--replicas=3")
    cluster.advance(60)
    assert cluster.kubectl("get", "pdb", "web").stdout.splitlines()[1].split()[3] == "1"


def test_edit_with_an_editor_script(cluster: Cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess

    from kube_helpers import KUBECTL

    _deploy(cluster, 5)
    editor = tmp_path / "ed.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/replicas: 2/replicas: 4/' \"$1\"\n")
    editor.chmod(0o755)
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "edit", "deploy/web"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "KUBE_EDITOR": str(editor)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "deployment.apps/web edited" in proc.stdout
    assert cluster.kjson("get", "deploy", "web")["spec"]["replicas"] == 4


def test_quota_admission_forbids_pods_over_the_limit(cluster: Cluster) -> None:
    cluster.kubectl("create", "quota", "small", "--hard=pods=1")
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {n}}}\nspec: {{containers: [{{name: c, image: busybox}}]}}\n"
    cluster.kubectl("apply", "-f", "-", input=pod.format(n="one"))
    cluster.advance(5)
    proc = cluster.kubectl("apply", "-f", "-", input=pod.format(n="two"), check=False)
    assert proc.returncode != 0 and "Forbidden" in proc.stderr and "exceeded quota: small" in proc.stderr


def test_describe_node_service_and_deployment(cluster: Cluster) -> None:
    _deploy(cluster)
    node = cluster.kjson("get", "pods")["items"][0]["spec"]["nodeName"]
    desc = cluster.kubectl("describe", "node", node).stdout
    assert f"Name:               {node}" in desc and "Non-terminated Pods:" in desc and "web-" in desc
    svc = cluster.kubectl("describe", "svc", "web").stdout
    assert "app=web" in svc and "Endpoints:" in svc and "10.244." in svc and ":80" in svc
    dep = cluster.kubectl("describe", "deploy", "web").stdout
    assert "NewReplicaSet:" in dep and "ScalingReplicaSet" in dep


def test_foreground_deletion_removes_dependents_first(cluster: Cluster) -> None:
    _deploy(cluster)
    out = cluster.kubectl("delete", "deploy", "web", "--cascade=foreground", "--wait=false").stdout
    assert 'deployment.apps "web" deleted' in out
    dep = cluster.kjson("get", "deploy", "web")  # still there, marked, while dependents go
    assert dep["metadata"]["deletionTimestamp"] and "foregroundDeletion" in dep["metadata"]["finalizers"]
    cluster.advance(30)
    assert cluster.kubectl("get", "deploy,rs,pods", "-o", "name").stdout.strip() == ""
