"""Chaos Mesh as it is deployed: its pods in ``chaos-mesh``, experiment status and records, the
Events its controller-manager records, and Schedules that recreate their child experiments."""

from __future__ import annotations

from typing import Any

from faultkit import EVENTS, NODES, PODS, Cluster, healed

from itbench_agents.twin.faults.chaos import CHAOS_GRS

Obj = dict[str, Any]


def _chaos(kind: str, name: str, spec: Obj, ns: str = "chain") -> Obj:
    return {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def _delay(app: str = "c", **extra: Any) -> Obj:
    return {
        "action": "delay",
        "mode": "all",
        "selector": {"namespaces": ["chain"], "labelSelectors": {"app": app}},
        "delay": {"latency": "20s"},
        **extra,
    }


def _conds(obj: Obj) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def _events_on(c: Cluster, name: str, ns: str = "chain") -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["reason"], e["message"])
        for e in c.twin.store.list(EVENTS, ns)
        if e["involvedObject"].get("name") == name
    ]


def test_chaos_mesh_runs_its_controller_manager_and_a_daemon_per_node(chain: Cluster) -> None:
    pods = chain.twin.store.list(PODS, "chaos-mesh")
    by_comp: dict[str, list[Obj]] = {}
    for p in pods:
        by_comp.setdefault(p["metadata"]["labels"]["app.kubernetes.io/component"], []).append(p)
    assert len(by_comp["controller-manager"]) == 3
    nodes = chain.twin.store.list(NODES)
    assert sorted(p["spec"]["nodeName"] for p in by_comp["chaos-daemon"]) == sorted(
        n["metadata"]["name"] for n in nodes if not n["spec"].get("taints")
    )
    for p in pods:
        assert p["metadata"]["name"].startswith(("chaos-controller-manager-", "chaos-daemon-"))
        assert p["status"]["phase"] == "Running", p["status"]
        assert all(cs["ready"] for cs in p["status"]["containerStatuses"]), p["metadata"]["name"]


def test_experiment_status_records_and_events(chain: Cluster) -> None:
    obj = _chaos("NetworkChaos", "c-delay", _delay(duration="300s"))
    chain.create(CHAOS_GRS["NetworkChaos"], obj)
    chain.advance(10)
    cur = chain.get(CHAOS_GRS["NetworkChaos"], "c-delay")
    assert cur is not None
    assert _conds(cur) == {
        "Selected": "True",
        "AllInjected": "True",
        "AllRecovered": "False",
        "Paused": "False",
    }
    recs = cur["status"]["experiment"]["containerRecords"]
    pod = chain.pods("c")[0]["metadata"]["name"]
    assert [r["id"] for r in recs] == [f"chain/{pod}"]
    assert recs[0]["phase"] == "Injected" and recs[0]["injectedCount"] == 1
    assert ("Normal", "Applied", f"Successfully apply chaos for chain/{pod}") in _events_on(chain, "c-delay")
    assert chain.degraded() == {"a", "b"}
    # pausing recovers: Paused condition, a Recovered event, the app heals
    chain.edit(
        CHAOS_GRS["NetworkChaos"],
        "c-delay",
        lambda o: (
            o["metadata"].setdefault("annotations", {}).__setitem__("experiment.chaos-mesh.org/pause", "true")
        ),
    )
    chain.advance(5)
    cur = chain.get(CHAOS_GRS["NetworkChaos"], "c-delay")
    assert cur is not None
    assert _conds(cur)["Paused"] == "True" and _conds(cur)["AllRecovered"] == "True"
    evs = _events_on(chain, "c-delay")
    assert ("Normal", "Paused", "Experiment has been paused") in evs
    assert ("Normal", "Recovered", f"Successfully recover chaos for chain/{pod}") in evs
    healed(chain, 120)
    # resuming re-applies; then the duration runs out: TimeUp
    chain.edit(
        CHAOS_GRS["NetworkChaos"],
        "c-delay",
        lambda o: o["metadata"]["annotations"].pop("experiment.chaos-mesh.org/pause"),
    )
    chain.advance(5)
    cur = chain.get(CHAOS_GRS["NetworkChaos"], "c-delay")
    assert cur is not None and _conds(cur)["AllInjected"] == "True"
    assert cur["status"]["experiment"]["containerRecords"][0]["injectedCount"] == 2
    chain.advance(250)
    cur = chain.get(CHAOS_GRS["NetworkChaos"], "c-delay")
    assert cur is not None and _conds(cur)["AllRecovered"] == "True"
    assert cur["status"]["experiment"]["desiredPhase"] == "Stop"
    assert ("Normal", "TimeUp", "Time up according to the duration") in _events_on(chain, "c-delay")


def test_stress_chaos_records_are_per_container(chain: Cluster) -> None:
    spec = {
        "mode": "one",
        "selector": {"namespaces": ["chain"], "labelSelectors": {"app": "c"}},
        "stressors": {"cpu": {"workers": 1, "load": 10}},
    }
    chain.create(CHAOS_GRS["StressChaos"], _chaos("StressChaos", "c-cpu", spec))
    chain.advance(5)
    cur = chain.get(CHAOS_GRS["StressChaos"], "c-cpu")
    assert cur is not None
    pod = chain.pods("c")[0]
    ct = pod["spec"]["containers"][0]["name"]
    ids = [r["id"] for r in cur["status"]["experiment"]["containerRecords"]]
    assert ids == [f"chain/{pod['metadata']['name']}/{ct}"]
    chain.delete(CHAOS_GRS["StressChaos"], "c-cpu")


def test_schedule_in_chaos_mesh_namespace_recreates_its_child_until_the_schedule_goes(chain: Cluster) -> None:
    """ITBench's form: Schedule in ``chaos-mesh``, cron every minute, Forbid, historyLimit 1, no
    duration (the child runs until removed)."""
    sched = _chaos(
        "Schedule",
        "c-net",
        {
            "schedule": "* * * * *",
            "type": "NetworkChaos",
            "concurrencyPolicy": "Forbid",
            "historyLimit": 1,
            "networkChaos": _delay(),
        },
        ns="chaos-mesh",
    )
    chain.create(CHAOS_GRS["Schedule"], sched)
    chain.advance(65)
    kids = chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chaos-mesh")
    assert len(kids) == 1
    kid = kids[0]
    s = chain.get(CHAOS_GRS["Schedule"], "c-net", ns="chaos-mesh")
    assert s is not None
    assert kid["metadata"]["name"].startswith("c-net-") and len(kid["metadata"]["name"]) > len("c-net-")
    assert kid["metadata"]["ownerReferences"][0]["kind"] == "Schedule"
    assert kid["metadata"]["ownerReferences"][0]["uid"] == s["metadata"]["uid"]
    assert s["status"]["active"][0]["uid"] == kid["metadata"]["uid"] and s["status"]["time"]
    assert ("Normal", "Spawned", f"Create new object: {kid['metadata']['name']}") in _events_on(
        chain, "c-net", "chaos-mesh"
    )
    assert _conds(kid)["AllInjected"] == "True"
    assert chain.degraded() == {"a", "b"}
    chain.advance(60)  # the next tick: the child still runs → Forbid, no second child
    assert len(chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chaos-mesh")) == 1
    assert any(r == "Forbid" and t == "Warning" for t, r, _ in _events_on(chain, "c-net", "chaos-mesh"))
    # deleting only the child: healthy for a moment, then the next tick brings a new child back
    chain.delete(CHAOS_GRS["NetworkChaos"], kid["metadata"]["name"], ns="chaos-mesh")
    chain.advance(2)
    assert not chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chaos-mesh")
    chain.advance(70)
    again = chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chaos-mesh")
    assert len(again) == 1 and again[0]["metadata"]["name"] != kid["metadata"]["name"]
    assert chain.degraded() == {"a", "b"}
    # deleting the Schedule removes its child and fixes the app
    chain.delete(CHAOS_GRS["Schedule"], "c-net", ns="chaos-mesh")
    chain.advance(5)
    assert not chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chaos-mesh")
    healed(chain, 180)


def test_schedule_crd_describes_cron_policy_history_and_the_embedded_experiment() -> None:
    from itbench_agents.twin.faults.chaos import chaos_crds

    crd = next(c for c in chaos_crds() if c["spec"]["names"]["kind"] == "Schedule")
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert {"schedule", "type", "concurrencyPolicy", "historyLimit", "networkChaos", "stressChaos"} <= set(
        spec["properties"]
    )
    assert spec["required"] == ["schedule", "type"]
    assert spec["properties"]["concurrencyPolicy"]["enum"] == ["Forbid", "Allow"]
