"""The event recorder (aggregation, names, expiry) and determinism of the whole controller set."""

from __future__ import annotations

import json
import re

from ctl_helpers import DEPLOYMENTS, EVENTS, NODES, SERVICES, ScriptedRuntime, deployment, events_for

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.controllers.events import record_event
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.store import clone
from itbench_agents.twin.runtime import ContainerVerdict


def test_repeats_aggregate_into_count(twin):
    node = twin.store.get(NODES, "", "twin-worker-1")
    first = record_event(twin, node, "Rebooted", "Node rebooted", type="Warning", host="twin-worker-1")
    twin.advance(30)
    second = record_event(twin, node, "Rebooted", "Node rebooted", type="Warning", host="twin-worker-1")
    assert first["metadata"]["name"] == second["metadata"]["name"]
    assert re.fullmatch(r"twin-worker-1\.[0-9a-f]+", first["metadata"]["name"])
    assert second["count"] == 2 and second["firstTimestamp"] != second["lastTimestamp"]
    assert second["metadata"]["namespace"] == "default"  # cluster-scoped objects' events live in default
    assert second["involvedObject"] == {
        "kind": "Node",
        "apiVersion": "v1",
        "name": "twin-worker-1",
        "uid": node["metadata"]["uid"],
        "resourceVersion": node["metadata"]["resourceVersion"],
    }
    other = record_event(twin, node, "Rebooted", "Node rebooted again", type="Warning", host="twin-worker-1")
    assert other["metadata"]["name"] != first["metadata"]["name"]


def test_events_expire_after_an_hour(twin):
    node = twin.store.get(NODES, "", "twin-worker-1")
    ev = record_event(twin, node, "X", "y")
    twin.advance(3599, step=600)
    assert twin.store.get(EVENTS, "default", ev["metadata"]["name"]) is not None
    twin.advance(2)
    assert twin.store.get(EVENTS, "default", ev["metadata"]["name"]) is None


def test_no_events_into_missing_namespace(twin):
    obj = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x", "namespace": "ghost", "uid": "u"}}
    assert record_event(twin, obj, "X", "y") is None


def _script(twin: Twin, runtime: ScriptedRuntime) -> list[str]:
    runtime.rules["crash"] = ContainerVerdict(exit_after_s=4.0, exit_code=137, exit_reason="OOMKilled")
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=3))
    twin.store.create(DEPLOYMENTS, deployment("bad", replicas=2, container="crash"))
    twin.store.create(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]},
        },
    )
    twin.advance(120, step=7)
    d = clone(twin.store.get(DEPLOYMENTS, "default", "web"))
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/app:2.0"
    d["metadata"].pop("resourceVersion")
    twin.store.update(DEPLOYMENTS, d)
    twin.advance(300, step=13)
    return [json.dumps([e.rv, e.type, str(e.gr), e.obj, e.time], sort_keys=True) for e in twin.store.log]


def test_same_seed_same_script_same_log():
    logs = []
    for _ in range(2):
        rt = ScriptedRuntime()
        logs.append(_script(Twin(seed=7, clock=ManualClock(), runtime=rt), rt))
    assert logs[0] == logs[1]
    assert len(logs[0]) > 200


def test_crash_loop_events_in_log(twin, runtime):
    runtime.rules["crash"] = ContainerVerdict(exit_after_s=4.0, exit_code=137, exit_reason="OOMKilled")
    twin.store.create(DEPLOYMENTS, deployment("bad", replicas=1, container="crash"))
    twin.advance(60)
    pods = [
        p
        for p in twin.store.list(__import__("ctl_helpers").PODS, "default")
        if p["metadata"]["name"].startswith("bad-")
    ]
    assert events_for(twin, pods[0]["metadata"]["name"], "BackOff")
