"""StatefulSets, DaemonSets, Jobs, CronJobs and HPAs."""

from __future__ import annotations

from ctl_helpers import DEPLOYMENTS, NODES, PODS, condition, deployment, events_for, hpa, pods_of

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.kube.store import clone
from itbench_agents.twin.runtime import ContainerVerdict

STS = GroupResource("apps", "statefulsets")
DS = GroupResource("apps", "daemonsets")
REVS = GroupResource("apps", "controllerrevisions")
JOBS = GroupResource("batch", "jobs")
CRONJOBS = GroupResource("batch", "cronjobs")
HPAS = GroupResource("autoscaling", "horizontalpodautoscalers")
PVCS = GroupResource("", "persistentvolumeclaims")


def _template(name, image="registry.example/db:1", restart=None, **res):
    spec = {"containers": [{"name": "main", "image": image, **({"resources": res} if res else {})}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": name}}, "spec": spec}


def _update(twin, gr, ns, name, fn):
    obj = clone(twin.store.get(gr, ns, name))
    fn(obj)
    obj["metadata"].pop("resourceVersion", None)
    return twin.store.update(gr, obj)


def test_statefulset_ordered_pods_pvcs_and_rolling_update(twin):
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": _template("db"),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
        },
    }
    twin.store.create(STS, sts)
    twin.sync()
    assert [p["metadata"]["name"] for p in pods_of(twin, "db")] == ["db-0"]  # OrderedReady: one at a time
    twin.advance(20)
    pods = pods_of(twin, "db")
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1", "db-2"]
    assert all(p["status"]["phase"] == "Running" for p in pods)
    assert pods[1]["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert pods[1]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "data-db-1"
    assert twin.store.get(PVCS, "default", "data-db-2")["status"]["phase"] == "Bound"
    st = twin.store.get(STS, "default", "db")["status"]
    assert st["readyReplicas"] == 3 and st["currentRevision"] == st["updateRevision"]
    rev1 = st["updateRevision"]
    assert twin.store.get(REVS, "default", rev1)["revision"] == 1
    _update(
        twin,
        STS,
        "default",
        "db",
        lambda o: o["spec"]["template"]["spec"]["containers"][0].update(image="registry.example/db:2"),
    )
    twin.advance(60)
    st = twin.store.get(STS, "default", "db")["status"]
    assert st["updateRevision"] != rev1 and st["currentRevision"] == st["updateRevision"]
    assert {p["spec"]["containers"][0]["image"] for p in pods_of(twin, "db")} == {"registry.example/db:2"}
    _update(twin, STS, "default", "db", lambda o: o["spec"].update(replicas=1))
    twin.advance(30)
    assert [p["metadata"]["name"] for p in pods_of(twin, "db")] == ["db-0"]


def test_daemonset_one_pod_per_schedulable_node(twin):
    nodes = [n["metadata"]["name"] for n in twin.store.list(NODES)]
    _update(
        twin,
        NODES,
        "",
        nodes[0],
        lambda o: o["spec"].update(taints=[{"key": "x", "value": "y", "effect": "NoSchedule"}]),
    )
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": _template("agent")},
    }
    twin.store.create(DS, ds)
    twin.advance(10)
    pods = pods_of(twin, "agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(nodes[1:])
    st = twin.store.get(DS, "default", "agent")["status"]
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"]) == (2, 2, 2)
    # cordoned nodes still run daemon pods (they tolerate unschedulable)
    _update(twin, NODES, "", nodes[1], lambda o: o["spec"].update(unschedulable=True))
    _update(twin, NODES, "", nodes[0], lambda o: o["spec"].pop("taints"))
    twin.advance(10)
    assert len(pods_of(twin, "agent")) == 3


def test_job_completions_and_backoff_limit(twin, runtime):
    runtime.rules["main"] = ContainerVerdict(exit_after_s=5.0, exit_code=0, exit_reason="Completed")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {"completions": 3, "parallelism": 2, "template": _template("batch", restart="Never")},
    }
    twin.store.create(JOBS, job)
    twin.advance(2)
    assert len(pods_of(twin, "batch")) == 2
    twin.advance(30)
    j = twin.store.get(JOBS, "default", "batch")
    assert j["status"]["succeeded"] == 3 and "active" not in j["status"]
    assert condition(j, "Complete")["status"] == "True"
    assert "completionTime" in j["status"]
    assert events_for(twin, "batch", "Completed")[0]["message"] == "Job completed"

    runtime.rules["main"] = ContainerVerdict(exit_after_s=1.0, exit_code=2)
    bad = {
        **job,
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"backoffLimit": 2, "template": _template("bad", restart="Never")},
    }
    twin.store.create(JOBS, bad)
    twin.advance(25)
    j = twin.store.get(JOBS, "default", "bad")
    assert j["status"]["failed"] == 2  # replacements wait 10 s, then 20 s after each failure
    assert condition(j, "Failed") is None
    twin.advance(60)
    j = twin.store.get(JOBS, "default", "bad")
    assert j["status"]["failed"] == 3
    assert condition(j, "Failed")["reason"] == "BackoffLimitExceeded"
    starts = sorted(
        twin.kubelet.container_history("default", p["metadata"]["name"], "main")[0].started_at
        for p in twin.store.list(PODS, "default")
        if p["metadata"]["name"].startswith("bad-")
    )
    assert starts[1] - starts[0] > 10 and starts[2] - starts[1] > 20


def test_cronjob_runs_on_virtual_clock(twin, runtime):
    runtime.rules["main"] = ContainerVerdict(exit_after_s=2.0, exit_code=0, exit_reason="Completed")
    cj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": _template("tick", restart="OnFailure")}},
        },
    }
    twin.store.create(CRONJOBS, cj)
    twin.advance(16 * 60, step=30)
    jobs = sorted(j["metadata"]["name"] for j in twin.store.list(JOBS, "default"))
    assert len(jobs) == 3  # at :05, :10, :15
    assert all(int(n.split("-")[1]) % 5 == 0 for n in jobs)
    st = twin.store.get(CRONJOBS, "default", "tick")["status"]
    assert st["lastScheduleTime"].endswith("00:15:00Z")
    twin.advance(30 * 60, step=60)
    assert len(twin.store.list(JOBS, "default")) == 3  # successfulJobsHistoryLimit


def test_hpa_scales_up_and_limits(twin, runtime):
    twin.store.create(DEPLOYMENTS, deployment("api", replicas=1, container="api", requests={"cpu": "100m"}))
    runtime.cpu["api"] = 0.2  # 200 % of request
    twin.store.create(HPAS, hpa("api", max_r=3))
    twin.advance(60)
    d = twin.store.get(DEPLOYMENTS, "default", "api")
    assert d["spec"]["replicas"] == 3
    h = twin.store.get(HPAS, "default", "api")
    assert h["status"]["desiredReplicas"] == 3
    assert condition(h, "ScalingLimited")["reason"] == "TooManyReplicas"
    assert condition(h, "ScalingActive")["status"] == "True"
    ev = events_for(twin, "api", "SuccessfulRescale")
    assert (
        ev[0]["message"]
        == "New size: 3; reason: cpu resource utilization (percentage of request) above target"
    )
    assert h["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 200


def test_hpa_without_requests_reports_failed_metric(twin):
    twin.store.create(DEPLOYMENTS, deployment("api", container="api"))
    twin.store.create(HPAS, hpa("api"))
    twin.advance(30)
    h = twin.store.get(HPAS, "default", "api")
    c = condition(h, "ScalingActive")
    assert c["status"] == "False" and c["reason"] == "FailedGetResourceMetric"
    pod = pods_of(twin, "api")[0]["metadata"]["name"]
    assert c["message"] == (
        f"the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu "
        f"in container api of Pod {pod}"
    )
    assert events_for(twin, "api", "FailedGetResourceMetric")[0]["type"] == "Warning"


def test_hpa_scale_down_waits_for_stabilisation(twin, runtime):
    twin.store.create(DEPLOYMENTS, deployment("api", replicas=4, container="api", requests={"cpu": "100m"}))
    runtime.cpu["api"] = 0.01
    twin.store.create(HPAS, hpa("api", min_r=1, max_r=5))
    twin.advance(200)
    assert twin.store.get(DEPLOYMENTS, "default", "api")["spec"]["replicas"] == 4
    twin.advance(200)
    assert twin.store.get(DEPLOYMENTS, "default", "api")["spec"]["replicas"] == 1


def test_hpa_behavior_shortens_scale_down_window(twin, runtime):
    twin.store.create(DEPLOYMENTS, deployment("api", replicas=4, container="api", requests={"cpu": "100m"}))
    runtime.cpu["api"] = 0.01
    obj = hpa("api", min_r=2, max_r=5)
    obj["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 30}}
    twin.store.create(HPAS, obj)
    twin.advance(60)
    assert twin.store.get(DEPLOYMENTS, "default", "api")["spec"]["replicas"] == 2
    h = twin.store.get(HPAS, "default", "api")
    assert condition(h, "ScalingLimited")["reason"] == "TooFewReplicas"


def test_hpa_missing_target(twin):
    twin.store.create(HPAS, hpa("ghost"))
    twin.advance(20)
    h = twin.store.get(HPAS, "default", "ghost")
    assert condition(h, "AbleToScale")["message"] == (
        'the HPA controller was unable to get the target\'s current scale: deployments.apps "ghost" not found'
    )
    assert events_for(twin, "ghost", "FailedGetScale")[0]["message"] == 'deployments.apps "ghost" not found'
