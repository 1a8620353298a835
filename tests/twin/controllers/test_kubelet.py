"""The kubelet: pull, start, crash loops with the real back-off, probes, init containers, status."""

from __future__ import annotations

from ctl_helpers import PODS, condition, cstatus, events_for

from itbench_agents.k8s.times import parse_rfc3339
from itbench_agents.twin.runtime import ContainerVerdict


def _pod(name="p", image="registry.example/app:1.0", restart="Always", init=None, **extra):
    spec = {"restartPolicy": restart, "containers": [{"name": "app", "image": image, **extra}]}
    if init:
        spec["initContainers"] = init
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _get(twin, name="p"):
    return twin.store.get(PODS, "default", name)


def test_pod_runs_with_full_status(twin):
    t0 = twin.now()
    twin.store.create(PODS, _pod())
    twin.advance(5)
    p = _get(twin)
    st = p["status"]
    assert st["phase"] == "Running"
    assert st["podIP"].startswith("10.244.") and st["hostIP"].startswith("172.18.0.")
    assert st["qosClass"] == "BestEffort"
    c = cstatus(p)
    assert c["ready"] and c["started"] and c["restartCount"] == 0
    assert c["containerID"].startswith("containerd://")
    assert [x["type"] for x in st["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert all(x["status"] == "True" for x in st["conditions"])
    reasons = [
        e["reason"] for e in sorted(events_for(twin, "p"), key=lambda e: e["metadata"]["resourceVersion"])
    ]
    assert reasons == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    started = parse_rfc3339(c["state"]["running"]["startedAt"])
    assert t0 <= started <= t0 + 3
    [run] = twin.kubelet.container_history("default", "p", "app")
    assert run.finished_at is None


def test_crash_loop_backoff_timings(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(exit_after_s=2.0, exit_code=1, exit_reason="Error")
    twin.store.create(PODS, _pod())
    twin.advance(400, step=1)
    runs = twin.kubelet.container_history("default", "p", "app")
    starts = [r.started_at - runs[0].started_at for r in runs]
    # crash at +2, PLEG +1 -> immediate restart at +3; then each start waits for the back-off that began
    # at the previous restart: 10, 20, 40, 80, 160, 300 s
    gaps = [round(b - a, 3) for a, b in zip(starts[1:], starts[2:], strict=False)]
    assert round(starts[1], 3) == 3.0
    assert gaps[:4] == [10.0, 20.0, 40.0, 80.0]
    assert all(r.exit_code == 1 and r.reason == "Error" for r in runs if r.finished_at is not None)
    p = _get(twin)
    c = cstatus(p)
    assert c["restartCount"] == len(runs) - 1
    assert c["lastState"]["terminated"]["reason"] == "Error"
    assert p["status"]["phase"] == "Running"
    backoff = events_for(twin, "p", "BackOff")
    assert backoff and backoff[0]["type"] == "Warning"
    assert (
        backoff[0]["message"]
        == f"Back-off restarting failed container app in pod p_default({p['metadata']['uid']})"
    )
    assert backoff[0]["count"] >= 4
    assert backoff[0]["involvedObject"]["fieldPath"] == "spec.containers{app}"


def test_crash_loop_state_is_waiting_crashloopbackoff_between_restarts(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(exit_after_s=1.0)
    twin.store.create(PODS, _pod())
    twin.advance(9, step=0.5)
    runs = twin.kubelet.container_history("default", "p", "app")
    # pulled and started, exited after 1 s, restarted right after the 1 s relist, exited again
    assert len(runs) == 2 and round(runs[1].started_at - runs[0].finished_at, 3) == 1.0
    assert twin.now() < runs[1].started_at + 10  # the next start waits for the 10 s back-off
    c = cstatus(_get(twin))
    assert c["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert c["state"]["waiting"]["message"].startswith(
        "back-off 10s restarting failed container=app pod=p_default("
    )
    assert not c["ready"]
    assert condition(_get(twin), "Ready")["reason"] == "ContainersNotReady"


def test_backoff_resets_after_ten_minutes_of_running(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(exit_after_s=700.0)
    twin.store.create(PODS, _pod())
    twin.advance(2200, step=20)
    runs = twin.kubelet.container_history("default", "p", "app")
    starts = [r.started_at for r in runs]
    # every instance ran > 600 s, so every restart happens right after the crash (+1 s relist)
    assert [round(b - a, 3) for a, b in zip(starts, starts[1:], strict=False)] == [701.0, 701.0, 701.0]


def test_oomkilled_shows_in_last_state(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(exit_after_s=5.0, exit_code=137, exit_reason="OOMKilled")
    twin.store.create(PODS, _pod(resources={"limits": {"memory": "20Mi", "cpu": "100m"}}))
    twin.advance(10)
    p = _get(twin)
    c = cstatus(p)
    assert p["status"]["qosClass"] == "Guaranteed"
    assert c["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert c["lastState"]["terminated"]["exitCode"] == 137
    assert c["restartCount"] == 1


def test_image_pull_backoff(twin, runtime):
    msg = 'Failed to pull image "registry.example/app:nope": rpc error: code = NotFound desc = not found'
    runtime.rules["app"] = ContainerVerdict(pull_error=msg)
    twin.store.create(PODS, _pod(image="registry.example/app:nope"))
    twin.advance(2.6, step=0.2)
    c = cstatus(_get(twin))
    assert c["state"]["waiting"]["reason"] == "ErrImagePull"
    twin.advance(1.5, step=0.5)
    p = _get(twin)
    c = cstatus(p)
    assert c["state"]["waiting"] == {
        "reason": "ImagePullBackOff",
        "message": 'Back-off pulling image "registry.example/app:nope"',
    }
    assert p["status"]["phase"] == "Pending"
    assert "imageID" in c and c["imageID"] == "" and "containerID" not in c
    failed = {e["message"]: e for e in events_for(twin, "p", "Failed")}
    assert msg in failed and "Error: ErrImagePull" in failed and "Error: ImagePullBackOff" in failed
    twin.advance(120, step=1)
    pulling = events_for(twin, "p", "Pulling")[0]
    # pulls at ~0, +10, +30, +70 (back-off doubling from 10 s)
    assert pulling["count"] == 4
    # the fix: the runtime now says the image pulls -> next retry succeeds
    runtime.rules.pop("app")
    twin.advance(200, step=1)
    assert cstatus(_get(twin))["state"].get("running")


def test_readiness_flips_with_verdict_and_liveness_kills(twin, runtime):
    state = {"ready": True}
    runtime.rules["app"] = lambda pod, c, now: ContainerVerdict(
        ready=state["ready"],
        unready_message='Readiness probe failed: Get "http://x:8080/": connection refused',
    )
    twin.store.create(PODS, _pod())
    twin.advance(5)
    assert cstatus(_get(twin))["ready"]
    state["ready"] = False
    # a cluster change makes the kubelet ask again
    twin.store.create(PODS, _pod(name="other"))
    twin.advance(25)
    p = _get(twin)
    assert not cstatus(p)["ready"] and condition(p, "Ready")["status"] == "False"
    unhealthy = events_for(twin, "p", "Unhealthy")
    assert unhealthy and unhealthy[0]["count"] >= 2 and unhealthy[0]["type"] == "Warning"
    state["ready"] = True
    twin.store.create(PODS, _pod(name="third"))
    twin.advance(2)
    assert cstatus(_get(twin))["ready"]


def test_liveness_failure_restarts_container(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(
        liveness_kill_after_s=30.0,
        liveness_message="Liveness probe failed: HTTP probe failed with statuscode: 500",
    )
    twin.store.create(PODS, _pod())
    twin.advance(40)
    p = _get(twin)
    assert cstatus(p)["restartCount"] == 1
    kills = events_for(twin, "p", "Killing")
    assert kills[0]["message"] == "Container app failed liveness probe, will be restarted"
    assert events_for(twin, "p", "Unhealthy")[0]["message"].startswith("Liveness probe failed")


def test_init_containers_run_in_order(twin, runtime):
    init = [{"name": "init-a", "image": "busybox:1.36"}, {"name": "init-b", "image": "busybox:1.36"}]
    twin.store.create(PODS, _pod(init=init))
    twin.sync()
    p = _get(twin)
    assert condition(p, "Initialized")["message"] == "containers with incomplete status: [init-a init-b]"
    assert cstatus(p)["state"]["waiting"]["reason"] == "PodInitializing"
    twin.advance(10)
    p = _get(twin)
    a = twin.kubelet.container_history("default", "p", "init-a")[0]
    b = twin.kubelet.container_history("default", "p", "init-b")[0]
    assert a.finished_at is not None and b.started_at >= a.finished_at
    assert cstatus(p, 0, init=True)["state"]["terminated"]["reason"] == "Completed"
    assert p["status"]["phase"] == "Running" and condition(p, "Initialized")["status"] == "True"


def test_hanging_init_container_blocks_pod(twin, runtime):
    runtime.rules["init-a"] = ContainerVerdict(hang=True)
    twin.store.create(PODS, _pod(init=[{"name": "init-a", "image": "busybox:1.36"}]))
    twin.advance(120)
    p = _get(twin)
    assert p["status"]["phase"] == "Pending"
    assert cstatus(p, 0, init=True)["state"].get("running")
    assert cstatus(p)["state"]["waiting"]["reason"] == "PodInitializing"


def test_crashing_init_container_crash_loops(twin, runtime):
    runtime.rules["init-a"] = ContainerVerdict(exit_after_s=1.0, exit_code=1)
    twin.store.create(PODS, _pod(init=[{"name": "init-a", "image": "busybox:1.36"}]))
    twin.advance(60)
    p = _get(twin)
    assert p["status"]["phase"] == "Pending"
    assert cstatus(p, 0, init=True)["restartCount"] >= 2
    assert twin.kubelet.container_history("default", "p", "app") == []


def test_config_error_recovers_when_cause_fixed(twin, runtime):
    state = {"err": 'secret "db" not found'}
    runtime.rules["app"] = lambda pod, c, now: ContainerVerdict(config_error=state["err"])
    twin.store.create(PODS, _pod())
    twin.advance(35)
    c = cstatus(_get(twin))
    assert c["state"]["waiting"] == {
        "reason": "CreateContainerConfigError",
        "message": 'secret "db" not found',
    }
    assert events_for(twin, "p", "Failed")[0]["message"] == 'Error: secret "db" not found'
    state["err"] = None
    twin.store.create(PODS, _pod(name="trigger"))
    twin.advance(1)
    assert cstatus(_get(twin))["state"].get("running")


def test_start_error_and_restart_policy_never(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(start_error='exec: "nope": executable file not found in $PATH')
    twin.store.create(PODS, _pod(restart="Never"))
    twin.advance(10)
    p = _get(twin)
    assert p["status"]["phase"] == "Failed"
    term = cstatus(p)["state"]["terminated"]
    assert term["reason"] == "StartError" and term["exitCode"] == 128
    assert "executable file not found" in events_for(twin, "p", "Failed")[0]["message"]


def test_job_like_pod_succeeds(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(exit_after_s=3.0, exit_code=0, exit_reason="Completed")
    twin.store.create(PODS, _pod(restart="OnFailure"))
    twin.advance(10)
    p = _get(twin)
    assert p["status"]["phase"] == "Succeeded"
    assert condition(p, "Ready")["reason"] == "PodCompleted"


def test_verdict_change_applies_from_that_moment(twin, runtime):
    state = {"exit": None}
    runtime.rules["app"] = lambda pod, c, now: ContainerVerdict(
        exit_after_s=state["exit"], exit_code=137, exit_reason="OOMKilled"
    )
    twin.store.create(PODS, _pod())
    twin.advance(100)
    assert cstatus(_get(twin))["restartCount"] == 0
    state["exit"] = 5.0  # e.g. a memory stress appeared: the running container dies now
    t = twin.now()
    twin.store.create(PODS, _pod(name="trigger"))
    twin.advance(3)
    [first, *_] = twin.kubelet.container_history("default", "p", "app")
    assert first.finished_at == t and first.reason == "OOMKilled"


def test_deleted_pod_gets_killing_events_and_is_forgotten(twin):
    twin.store.create(PODS, _pod())
    twin.advance(5)
    twin.store.delete(PODS, "default", "p")
    twin.sync()
    assert [e["message"] for e in events_for(twin, "p", "Killing")] == ["Stopping container app"]
    assert twin.kubelet.pod_state("default", "p") is None


def test_image_already_present_on_second_pod(twin):
    twin.store.create(PODS, _pod(name="a"))
    twin.advance(5)
    node = _get(twin, "a")["spec"]["nodeName"]
    pod = _pod(name="b")
    pod["spec"]["nodeName"] = node
    twin.store.create(PODS, pod)
    twin.advance(5)
    [pulled] = events_for(twin, "b", "Pulled")
    assert pulled["message"] == 'Container image "registry.example/app:1.0" already present on machine'


def test_start_error_is_run_container_error_then_crash_loop(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(
        start_error='exec: "invalid-command": executable file not found in $PATH'
    )
    twin.store.create(PODS, _pod())
    seen = set()
    for _ in range(60):
        twin.advance(0.5, step=0.5)
        c = cstatus(_get(twin))
        if "waiting" in c["state"]:
            seen.add(c["state"]["waiting"]["reason"])
    assert {"RunContainerError", "CrashLoopBackOff"} <= seen
    c = cstatus(_get(twin))
    assert c["lastState"]["terminated"]["reason"] == "StartError"
    assert c["lastState"]["terminated"]["exitCode"] == 128
    assert not c["started"]


def test_fixing_image_of_pod_in_pull_backoff_pulls_again_now(twin, runtime):
    runtime.rules["app"] = lambda pod, c, now: (
        ContainerVerdict(pull_error="Failed to pull image: not found")
        if c["image"].endswith(":nope")
        else ContainerVerdict()
    )
    twin.store.create(PODS, _pod(image="registry.example/app:nope"))
    twin.advance(60)
    assert cstatus(_get(twin))["state"]["waiting"]["reason"] == "ImagePullBackOff"
    from itbench_agents.twin.kube.store import clone

    p = clone(_get(twin))
    p["spec"]["containers"][0]["image"] = "registry.example/app:1.0"
    p["metadata"].pop("resourceVersion")
    twin.store.update(PODS, p)
    twin.advance(5)
    c = cstatus(_get(twin))
    assert c["state"].get("running") and c["image"] == "registry.example/app:1.0"


def test_recreated_pod_with_same_name_has_fresh_history(twin, runtime):
    runtime.rules["app"] = ContainerVerdict(exit_after_s=3.0)
    twin.store.create(PODS, _pod())
    twin.advance(30)
    old_uid = _get(twin)["metadata"]["uid"]
    assert len(twin.kubelet.container_history("default", "p", "app")) >= 2
    twin.store.delete(PODS, "default", "p")
    runtime.rules.pop("app")
    twin.store.create(PODS, _pod())
    twin.advance(5)
    assert len(twin.kubelet.container_history("default", "p", "app")) == 1
    assert len(twin.kubelet.container_history("default", "p", "app", uid=old_uid)) >= 2
    assert cstatus(_get(twin))["restartCount"] == 0
