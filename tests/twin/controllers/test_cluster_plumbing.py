"""What a real cluster shows that an SRE would notice when it is missing (issue 11): the projected
service-account token volume on every pod, node Leases renewed every 10 s and fresh node
heartbeats, and scheduler events in the events.k8s.io/v1 shape (``eventTime``, ``series``)."""

from __future__ import annotations

from ctl_helpers import EVENTS, NODES, PODS, deployment, events_for, pods_of

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.k8s.times import parse_rfc3339
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.controllers.admission import SA_MOUNT_PATH
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.store import clone

LEASES = GroupResource("coordination.k8s.io", "leases")
SERVICEACCOUNTS = GroupResource("", "serviceaccounts")


def _token_volumes(pod: dict) -> list[dict]:
    return [v for v in pod["spec"].get("volumes") or [] if v["name"].startswith("kube-api-access-")]


def test_pods_get_the_projected_service_account_token(twin: Twin) -> None:
    d = deployment("web", 2, initContainers=[{"name": "init", "image": "busybox:1.36"}])
    twin.apply([d])
    twin.advance(10)
    pods = pods_of(twin, "web")
    assert len(pods) == 2
    for pod in pods:
        assert pod["spec"]["serviceAccountName"] == "default"
        [vol] = _token_volumes(pod)
        assert len(vol["name"]) == len("kube-api-access-") + 5
        sources = vol["projected"]["sources"]
        assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
        assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
        assert sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.namespace"
        for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
            assert {"name": vol["name"], "mountPath": SA_MOUNT_PATH, "readOnly": True} in c["volumeMounts"]
    assert _token_volumes(pods[0])[0]["name"] != _token_volumes(pods[1])[0]["name"]


def test_token_volume_opt_outs(twin: Twin) -> None:
    twin.apply([deployment("off", automountServiceAccountToken=False)])
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet", "namespace": "default"}}
    twin.apply([{**sa, "automountServiceAccountToken": False}])
    twin.apply([deployment("quiet", serviceAccountName="quiet")])
    own = deployment("own")
    own["spec"]["template"]["spec"]["volumes"] = [{"name": "sa", "emptyDir": {}}]
    own["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "sa", "mountPath": SA_MOUNT_PATH}
    ]
    twin.apply([own])
    twin.advance(10)
    for name in ("off", "quiet", "own"):
        [pod] = pods_of(twin, name)
        assert _token_volumes(pod) == [], name


def test_token_volume_names_are_deterministic_per_seed() -> None:
    def names(seed: int) -> list[str]:
        tw = Twin(seed=seed, clock=ManualClock())
        tw.apply([deployment("web", 3)])
        tw.advance(10)
        return sorted(_token_volumes(p)[0]["name"] for p in pods_of(tw, "web"))

    assert names(1) == names(1)
    assert names(1) != names(2)


def test_node_leases_and_heartbeats_stay_fresh(twin: Twin) -> None:
    created = {n["metadata"]["name"]: n for n in twin.store.list(NODES)}
    twin.advance(3600, step=60)
    now = twin.now()
    leases = {lease["metadata"]["name"]: lease for lease in twin.store.list(LEASES, "kube-node-lease")}
    assert set(leases) == set(created)
    for name, lease in leases.items():
        assert lease["spec"]["holderIdentity"] == name and lease["spec"]["leaseDurationSeconds"] == 40
        assert now - parse_rfc3339(lease["spec"]["renewTime"]) <= 10.0
        assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
        node = twin.store.get(NODES, "", name)
        assert node is not None
        for c, c0 in zip(node["status"]["conditions"], created[name]["status"]["conditions"], strict=True):
            assert now - parse_rfc3339(c["lastHeartbeatTime"]) <= 300.0, c
            assert c["lastTransitionTime"] == c0["lastTransitionTime"]  # a heartbeat is no transition


def test_a_node_whose_kubelet_stopped_posting_gets_no_heartbeats(twin: Twin) -> None:
    node = twin.store.get(NODES, "", "twin-worker-2")
    assert node is not None
    down = clone(node)
    for c in down["status"]["conditions"]:
        if c["type"] == "Ready":
            c.update(
                status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status."
            )
    twin.store.update(
        NODES, {"metadata": {"name": "twin-worker-2"}, "status": down["status"]}, status_only=True
    )
    t_down = twin.now()
    twin.advance(900, step=30)
    lease = twin.store.get(LEASES, "kube-node-lease", "twin-worker-2")
    assert lease is not None and parse_rfc3339(lease["spec"]["renewTime"]) <= t_down
    node = twin.store.get(NODES, "", "twin-worker-2")
    assert node is not None
    assert all(parse_rfc3339(c["lastHeartbeatTime"]) <= t_down for c in node["status"]["conditions"])
    other = twin.store.get(LEASES, "kube-node-lease", "twin-worker-1")
    assert other is not None and twin.now() - parse_rfc3339(other["spec"]["renewTime"]) <= 10.0


def test_heartbeats_wake_no_controller(twin: Twin) -> None:
    """Lease renewals and heartbeat-only node updates are written, but not handed to the
    controllers (nothing they derive depends on them; a pending pod is not retried for them)."""
    twin.apply([deployment("web")])
    twin.advance(30)
    seen: list[tuple[str, str]] = []
    for c in twin.controllers.controllers:  # type: ignore[attr-defined]
        orig = c.on_change

        def spy(ev, orig=orig):  # noqa: ANN001, ANN202
            seen.append((ev.gr.resource, ev.type))
            return orig(ev)

        c.on_change = spy  # type: ignore[method-assign]
    rv = twin.store.resource_version
    twin.advance(1200, step=60)
    written = [e for e in twin.store.log if e.rv > rv]
    assert {(e.gr.resource, e.type) for e in written} >= {("leases", "MODIFIED"), ("nodes", "MODIFIED")}
    assert ("leases", "MODIFIED") not in seen and ("nodes", "MODIFIED") not in seen


def test_scheduler_events_use_the_events_v1_shape(twin: Twin) -> None:
    twin.apply([deployment("web"), deployment("huge", requests={"cpu": "64"})])
    twin.advance(5)
    [pod] = pods_of(twin, "web")
    [ev] = events_for(twin, pod["metadata"]["name"], "Scheduled")
    assert ev["eventTime"].endswith("Z") and "." in ev["eventTime"]  # MicroTime
    assert ev["firstTimestamp"] is None and ev["lastTimestamp"] is None and "count" not in ev
    assert ev["action"] == "Binding" and ev["source"] == {}
    assert ev["reportingComponent"] == "default-scheduler"
    assert ev["reportingInstance"].startswith("default-scheduler-")
    kubelet = events_for(twin, pod["metadata"]["name"], "Pulling")[0]
    assert kubelet["lastTimestamp"] and kubelet["source"]["component"] == "kubelet"  # core/v1 recorder
    [huge] = pods_of(twin, "huge")
    # a new pending pod, a deleted pod: each makes the scheduler retry the unschedulable one
    twin.apply([deployment("other")])
    twin.advance(30)
    twin.store.delete(PODS, "default", pods_of(twin, "other")[0]["metadata"]["name"])
    twin.advance(30)
    [fail] = events_for(twin, huge["metadata"]["name"], "FailedScheduling")
    assert fail["action"] == "Scheduling" and fail["type"] == "Warning" and fail["lastTimestamp"] is None
    series = fail["series"]
    assert series["count"] >= 2
    assert parse_rfc3339(series["lastObservedTime"]) > parse_rfc3339(fail["eventTime"])
    assert len([e for e in twin.store.list(EVENTS, "default") if e["reason"] == "FailedScheduling"]) == 1
