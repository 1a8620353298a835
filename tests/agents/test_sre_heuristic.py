"""sre-heuristic on a small twin cluster: each rule finds its fault and applies the standard fix."""

from __future__ import annotations

import json

import pytest

from itbench_agents.agents.base import AgentConfig
from itbench_agents.agents.sre_heuristic import HeuristicAgent, make_agent
from itbench_agents.core.task import Task
from itbench_agents.k8s.kinds import GroupResource

DEPLOY = GroupResource("apps", "deployments")
SVC = GroupResource("", "services")
CM = GroupResource("", "configmaps")
QUOTA = GroupResource("", "resourcequotas")

pytestmark = pytest.mark.kubectl


def _task(env, kind: str = "diagnosis+mitigation") -> Task:  # type: ignore[no-untyped-def]
    return Task(goal="g", kind=kind, endpoints=env.endpoints, workdir=str(env.workdir), namespaces=["shop"])


def _firing(env, service: str = "frontend") -> None:  # type: ignore[no-untyped-def]
    env.obs.alerts = lambda: [
        {"labels": {"alertname": "HighRequestErrorRate", "service_name": service}, "state": "firing"}
    ]


def _run(env, kind: str = "diagnosis+mitigation"):  # type: ignore[no-untyped-def]
    events: list[dict] = []
    out = make_agent(AgentConfig()).run(_task(env, kind), events.append)
    return out, events


def _changes_after_deploy(env, *commands: str) -> None:  # type: ignore[no-untyped-def]
    """Run kubectl ``commands`` long after the app was deployed, then let a minute pass."""
    from itbench_agents.tools.context import ToolContext
    from itbench_agents.tools.registry import get_tool

    env.twin.advance(900)
    ctx = ToolContext(endpoints=env.endpoints, namespaces=["shop"], phase="mitigation")
    for cmd in commands:
        res = get_tool("kubectl").invoke(ctx, {"command": cmd})
        assert not res.error, res.output
    env.twin.advance(60)


def test_scaled_to_zero_found_by_walking_the_graph(shop) -> None:  # type: ignore[no-untyped-def]
    out, events = _run(shop)
    assert [e.name for e in out.diagnosis.entities] == ["shop/Deployment/cart"]
    assert out.extra["path"] == ["frontend", "checkout", "cart"]
    assert out.diagnosis.propagations[0].source == "shop/Service/cart"
    assert out.mitigation_actions == ["kubectl scale deployment/cart --replicas=1 -n shop"]
    assert shop.twin.get(DEPLOY, "shop", "cart")["spec"]["replicas"] == 1
    assert all(e["type"] != "error" for e in events)


def test_diagnosis_only_changes_nothing(shop) -> None:  # type: ignore[no-untyped-def]
    out, _ = _run(shop, "diagnosis")
    assert out.diagnosis.entities[0].name == "shop/Deployment/cart" and out.mitigation_actions == []
    assert shop.twin.get(DEPLOY, "shop", "cart")["spec"]["replicas"] == 0


def test_no_alerts_no_incident(env) -> None:  # type: ignore[no-untyped-def]
    out, _ = _run(env)
    assert out.diagnosis is not None and out.diagnosis.entities == [] and out.mitigation_actions == []


def test_service_selector_typo_is_patched_back(env) -> None:  # type: ignore[no-untyped-def]
    svc = dict(env.twin.get(SVC, "shop", "cart"))
    env.twin.apply([{**svc, "spec": {**svc["spec"], "selector": {"app": "cart-typo"}}}])
    _firing(env)
    out, _ = _run(env)
    assert [e.name for e in out.diagnosis.entities] == ["shop/Service/cart"]
    assert env.twin.get(SVC, "shop", "cart")["spec"]["selector"] == {"app": "cart"}


def test_service_target_port_is_fixed(env) -> None:  # type: ignore[no-untyped-def]
    svc = env.twin.get(SVC, "shop", "checkout")
    ports = [{**svc["spec"]["ports"][0], "targetPort": 9999}]
    env.twin.apply([{**svc, "spec": {**svc["spec"], "ports": ports}}])
    _firing(env)
    out, _ = _run(env)
    assert [e.name for e in out.diagnosis.entities] == ["shop/Service/checkout"]
    assert env.twin.get(SVC, "shop", "checkout")["spec"]["ports"][0]["targetPort"] == 8080


def test_recent_quota_is_deleted_and_flag_turned_off(env) -> None:  # type: ignore[no-untyped-def]
    env.twin.advance(900)  # the fault comes long after the app was deployed
    flags = {"flags": {"cartFailure": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on"},
                       "adFailure": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off"}}}  # fmt: skip
    env.twin.apply([
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "mem", "namespace": "shop"}, "spec": {"hard": {"memory": "1Gi"}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flagd-config", "namespace": "shop"}, "data": {"demo.flagd.json": json.dumps(flags)}},
    ])  # fmt: skip
    _firing(env)
    out, _ = _run(env)
    names = {e.name for e in out.diagnosis.entities}
    assert names == {"shop/ResourceQuota/mem", "shop/Deployment/cart"}
    assert env.twin.get(QUOTA, "shop", "mem") is None
    data = json.loads(env.twin.get(CM, "shop", "flagd-config")["data"]["demo.flagd.json"])
    assert data["flags"]["cartFailure"]["defaultVariant"] == "off"
    assert data["flags"]["adFailure"]["defaultVariant"] == "off"


def test_a_change_that_takes_room_is_shown_starving_the_rollout_it_blocks() -> None:
    """A new quota (or a cordoned node, or a workload created after the app) named beside a rollout
    whose pods are pending: the diagnosis links the first to the second, so the pass can tell the
    cause from its consequence (docs/metrics.md); a rollout that fails on its own is not linked."""
    from itbench_agents.agents.sre_heuristic import Finding

    quota = Finding("shop/ResourceQuota/mem", None, "new quota", takes_room=True)
    node = Finding("Node/w1", None, "cordoned", takes_room=True)
    pending = Finding("shop/Deployment/cart", "cart", "pod cart-1 is Pending", stuck=True)
    crashing = Finding("shop/Deployment/ad", "ad", "pod ad-1: CrashLoopBackOff")
    links = HeuristicAgent.starvations([quota, node, pending, crashing], "shop")
    assert [(p.source, p.target) for p in links] == [
        ("shop/ResourceQuota/mem", "shop/Service/cart"),
        ("Node/w1", "shop/Service/cart"),
    ]
    assert HeuristicAgent.starvations([pending, crashing], "shop") == []


def test_deepest_unhealthy_walk() -> None:
    edges = [("fp", "fe", 1), ("fe", "checkout", 1), ("checkout", "payment", 1), ("fe", "ad", 1)]
    deepest, path = HeuristicAgent.deepest_unhealthy(["fp"], edges, {"fp", "fe", "checkout", "payment"})
    assert deepest == "payment" and path == ["fp", "fe", "checkout", "payment"]
    assert HeuristicAgent.deepest_unhealthy(["fe"], edges, {"fe"}) == ("fe", ["fe"])
    # not greedy: checkout's first unhealthy callee in name order (email) is a dead end
    edges += [("checkout", "email", 1), ("payment", "db", 1)]
    unhealthy = {"fp", "fe", "checkout", "email", "payment", "db"}
    assert HeuristicAgent.deepest_unhealthy(["fp"], edges, unhealthy)[1] == [
        "fp",
        "fe",
        "checkout",
        "payment",
        "db",
    ]


def test_chaos_experiment_is_deleted(env) -> None:  # type: ignore[no-untyped-def]
    chaos = {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": "NetworkChaos",
        "metadata": {"name": "cart-delay", "namespace": "shop"},
        "spec": {"action": "delay", "mode": "all", "selector": {"namespaces": ["shop"], "labelSelectors": {"app": "cart"}},
                 "delay": {"latency": "2s"}},
    }  # fmt: skip
    from itbench_agents.twin.faults.chaos import chaos_crds

    env.twin.apply(chaos_crds())
    env.twin.sync()
    env.twin.apply([chaos])
    _firing(env)
    out, _ = _run(env)
    assert [e.name for e in out.diagnosis.entities] == ["shop/NetworkChaos/cart-delay"]
    assert out.mitigation_actions == ["kubectl delete networkchaos.chaos-mesh.org cart-delay -n shop"]
    assert env.twin.get(GroupResource("chaos-mesh.org", "networkchaos"), "shop", "cart-delay") is None


def test_bad_rollout_is_undone_but_a_restart_is_not_a_change(env) -> None:  # type: ignore[no-untyped-def]
    from itbench_agents.tools.context import ToolContext
    from itbench_agents.tools.registry import get_tool

    env.twin.advance(900)
    ctx = ToolContext(endpoints=env.endpoints, namespaces=["shop"], phase="mitigation")
    kubectl = get_tool("kubectl")
    assert not kubectl.invoke(ctx, {"command": "rollout restart deployment/checkout"}).error
    res = kubectl.invoke(ctx, {"command": "set image deployment/cart cart=registry.local/cart:9.9-broken"})
    assert not res.error, res.output
    env.twin.advance(60)
    _firing(env, "cart")  # the new release's own service fails (its pods run: a bad build, not a bad pull)
    out, _ = _run(env)
    assert [e.name for e in out.diagnosis.entities] == ["shop/Deployment/cart"]
    assert out.mitigation_actions == ["kubectl rollout undo deployment/cart -n shop"]
    image = env.twin.get(DEPLOY, "shop", "cart")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "registry.local/cart:1.0"


def test_a_product_flag_on_neither_explains_a_bad_rollout_nor_is_turned_off(env) -> None:  # type: ignore[no-untyped-def]
    """Issue 26: product toggles are on in a healthy shop. One named after cart ("cartSaveForLater")
    is a weak suspect at most: cart's bad release is still undone, and the flag stays on."""
    from itbench_agents.tools.context import ToolContext
    from itbench_agents.tools.registry import get_tool

    flags = {"flags": {"cartSaveForLater": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on"}}}  # fmt: skip
    env.twin.apply([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flagd-config", "namespace": "shop"}, "data": {"demo.flagd.json": json.dumps(flags)}},
    ])  # fmt: skip
    env.twin.advance(900)
    ctx = ToolContext(endpoints=env.endpoints, namespaces=["shop"], phase="mitigation")
    res = get_tool("kubectl").invoke(
        ctx, {"command": "set image deployment/cart cart=registry.local/cart:9.9-broken"}
    )
    assert not res.error, res.output
    env.twin.advance(60)
    _firing(env, "cart")
    out, _ = _run(env)
    assert [e.name for e in out.diagnosis.entities] == ["shop/Deployment/cart"]
    assert out.mitigation_actions == ["kubectl rollout undo deployment/cart -n shop"]
    data = json.loads(env.twin.get(CM, "shop", "flagd-config")["data"]["demo.flagd.json"])
    assert data["flags"]["cartSaveForLater"]["defaultVariant"] == "on"


def test_a_healthy_release_off_the_failing_path_is_left_alone(env) -> None:  # type: ignore[no-untyped-def]
    """A benign env-var rollout of checkout beside a quota fault: the quota goes, the release
    stays (undoing every change is collateral damage, docs/metrics.md)."""
    _changes_after_deploy(env, "set env deployment/checkout LOG_LEVEL=debug")
    env.twin.apply([
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "mem", "namespace": "shop"}, "spec": {"hard": {"memory": "1Gi"}}},
    ])  # fmt: skip
    _firing(env, "cart")
    out, _ = _run(env)
    assert "shop/ResourceQuota/mem" in {e.name for e in out.diagnosis.entities}
    assert out.mitigation_actions == ["kubectl delete resourcequotas mem -n shop"]
    container = env.twin.get(DEPLOY, "shop", "checkout")["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "LOG_LEVEL", "value": "debug"} in container.get("env")


def test_a_healthy_release_beside_a_flag_fault_is_left_alone(env) -> None:  # type: ignore[no-untyped-def]
    """Everyday releases do not make a service a suspect: with a feature flag explaining the
    incident, the healthy release of frontend's other callee stays (rolling it back is collateral)."""
    _changes_after_deploy(env, "set env deployment/checkout LOG_LEVEL=debug")
    flags = {"flags": {"cartFailure": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "on"}}}  # fmt: skip
    env.twin.apply([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flagd-config", "namespace": "shop"}, "data": {"demo.flagd.json": json.dumps(flags)}},
    ])  # fmt: skip
    _firing(env, "frontend")
    out, _ = _run(env)
    assert [e.name for e in out.diagnosis.entities] == ["shop/Deployment/cart"]
    assert out.extra["path"] == ["frontend"]  # checkout's release alone does not put it on the path
    assert not any("rollout undo" in a for a in out.mitigation_actions)


def test_error_traces_lead_to_a_ready_callee_that_answers_nothing(env) -> None:  # type: ignore[no-untyped-def]
    """A callee whose pods are Ready but that answers nothing (its release runs the wrong binary)
    is found from the caller's error traces, and its release is the one undone."""
    from support.fakes import span

    _changes_after_deploy(
        env, "set env deployment/frontend LOG_LEVEL=debug", "set env deployment/cart MODE=other"
    )
    call = span("b", "p2", "GetCart", "a", error=True)
    call["tags"] += [
        {"key": "span.kind", "type": "string", "value": "client"},
        {"key": "server.address", "type": "string", "value": "cart"},
    ]
    env.obs.traces = [
        {"traceID": "t1", "spans": [span("a", "p1", "GET /", None, error=True), call],
         "processes": {"p1": {"serviceName": "checkout"}, "p2": {"serviceName": "checkout"}}},
    ]  # fmt: skip
    _firing(env, "checkout")
    out, _ = _run(env)
    assert out.extra["path"] == ["checkout", "cart"]
    assert [e.name for e in out.diagnosis.entities] == ["shop/Deployment/cart"]
    assert out.mitigation_actions == ["kubectl rollout undo deployment/cart -n shop"]


def test_a_callers_address_change_is_blamed_before_the_callee_it_names() -> None:
    from itbench_agents.agents.sre_heuristic import Finding

    shipping = Finding(
        "ns/Deployment/shipping", "shipping", "r", weak=True, changed_env=["QUOTE_ADDR=http://quote:0000"]
    )
    quote = Finding("ns/Deployment/quote", "quote", "r", weak=True, changed_env=["LOG_LEVEL=info"])
    path = ["checkout", "shipping", "quote"]
    assert HeuristicAgent.weak_suspects([shipping, quote], path) == [shipping]
    unrelated = Finding("ns/Deployment/shipping", "shipping", "r", weak=True, changed_env=["LOG_LEVEL=debug"])
    assert HeuristicAgent.weak_suspects([unrelated, quote], path) == [quote]
    assert HeuristicAgent.weak_suspects([unrelated, quote], []) == []


def test_a_deleted_service_is_recreated_even_when_its_workload_also_changed(env) -> None:  # type: ignore[no-untyped-def]
    _changes_after_deploy(env, "set env deployment/cart LOG_LEVEL=debug", "delete service cart")
    _firing(env, "checkout")
    out, _ = _run(env)
    assert [e.name for e in out.diagnosis.entities] == ["shop/Service/cart"]
    assert out.mitigation_actions == ["kubectl apply -f - -n shop"]
    assert env.twin.get(SVC, "shop", "cart") is not None


def test_a_paused_schedule_is_not_a_suspect(env) -> None:  # type: ignore[no-untyped-def]
    from itbench_agents.twin.faults.chaos import chaos_crds

    sel = {"namespaces": ["shop"], "labelSelectors": {"app": "cart"}}
    paused = {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": "Schedule",
        "metadata": {"name": "gameday", "namespace": "shop", "annotations": {"experiment.chaos-mesh.org/pause": "true"}},
        "spec": {"schedule": "0 3 * * 6", "type": "PodChaos", "historyLimit": 1, "concurrencyPolicy": "Forbid",
                 "podChaos": {"action": "pod-kill", "mode": "one", "selector": sel}},
    }  # fmt: skip
    active = {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": "NetworkChaos",
        "metadata": {"name": "cart-delay", "namespace": "shop"},
        "spec": {"action": "delay", "mode": "all", "selector": sel, "delay": {"latency": "2s"}},
    }
    env.twin.apply(chaos_crds())
    env.twin.sync()
    env.twin.apply([paused, active])
    env.twin.sync()
    _firing(env)
    out, _ = _run(env, "diagnosis")
    assert [e.name for e in out.diagnosis.entities] == ["shop/NetworkChaos/cart-delay"]


def restarted_pod(restarts: int, finished: str, ready: bool = True) -> dict:
    """A running pod "p" whose container "c" last ended with an error at ``finished``."""
    return {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "c",
                    "ready": ready,
                    "restartCount": restarts,
                    "lastState": {"terminated": {"reason": "Error", "finishedAt": finished}},
                }
            ],
        },
    }


def test_old_restarts_of_a_ready_container_are_history() -> None:
    from itbench_agents.agents.sre_heuristic import chaos_active

    def pod(finished: str, ready: bool = True) -> dict:
        return restarted_pod(3, finished, ready)

    agent = make_agent(AgentConfig())
    now = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    assert agent._pod_trouble([pod("2027-01-15T07:00:00Z")], now) is None
    assert agent._pod_trouble([pod("2027-01-15T07:55:00Z")], now) is not None
    assert agent._pod_trouble([pod("2027-01-15T07:00:00Z", ready=False)], now) is not None
    assert agent._pod_trouble([pod("2027-01-15T07:00:00Z")]) is not None  # no "now": every restart counts
    recovered = {"kind": "PodChaos", "status": {"conditions": [{"type": "AllRecovered", "status": "True"}]}}
    assert not chaos_active(recovered)
    assert chaos_active(
        {"kind": "PodChaos", "status": {"conditions": [{"type": "AllInjected", "status": "True"}]}}
    )


def test_a_crash_loop_is_trouble_at_any_restart_count() -> None:
    """A build that crashes a while after start is running and ready between its crashes: one
    recent crash is trouble, so the finding does not wait for the third restart (which came a few
    seconds after the alert, and made the README's figures depend on the agent's speed)."""

    def pod(restarts: int) -> dict:
        return restarted_pod(restarts, "2027-01-15T07:59:20Z")

    agent = make_agent(AgentConfig())
    now = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    assert agent._pod_trouble([pod(0)], now) is None
    for restarts in (1, 2, 3):
        assert agent._pod_trouble([pod(restarts)], now) == f"pod p: restarts={restarts} last=Error"


def test_a_flag_the_demo_does_not_document_is_a_weak_suspect() -> None:
    from itbench_agents.agents.sre_heuristic import Cluster

    flags = {
        "flags": {
            "recommendationCarouselV2": {"variants": {"on": True, "off": False}, "defaultVariant": "on"},
            "cartFailure": {"variants": {"on": True, "off": False}, "defaultVariant": "on"},
        }
    }
    cm = {"metadata": {"name": "flagd-config"}, "data": {"demo.flagd.json": json.dumps(flags)}}
    c = Cluster("shop", 0.0, {"configmaps": [cm]}, [], [])
    found = make_agent(AgentConfig())._flag_rule(c, ["cart", "recommendation"])
    assert [(f.reason.split()[2], f.weak, bool(f.fixes)) for f in found] == [
        ("cartFailure", False, True),
        ("recommendationCarouselV2", True, False),
    ]


def _read(env, monkeypatch, refuse: str | None = None):  # type: ignore[no-untyped-def]
    """The heuristic's read of the shop namespace; kubectl refuses to list ``refuse``."""
    from itbench_agents.agents import sre_heuristic
    from itbench_agents.tools.context import ToolContext
    from itbench_agents.tools.registry import ToolError

    real = sre_heuristic.kubectl_json
    calls: list[str] = []

    def kubectl_json(ctx, command: str):  # type: ignore[no-untyped-def]
        calls.append(command)
        if refuse is not None and refuse in command.split()[1].split(","):
            raise ToolError(
                f"kubectl exited with code 1:\nError from server (Forbidden): {refuse} is forbidden"
            )
        return real(ctx, command)

    monkeypatch.setattr(sre_heuristic, "kubectl_json", kubectl_json)
    ctx = ToolContext(endpoints=env.endpoints, namespaces=["shop"])
    return HeuristicAgent(AgentConfig()).read_cluster(ctx, "shop", lambda e: None), calls


def test_the_namespace_is_read_with_one_get_of_every_resource(env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from itbench_agents.agents.sre_heuristic import NAMESPACED_KINDS

    cluster, calls = _read(env, monkeypatch)
    assert calls == [
        "get " + ",".join(NAMESPACED_KINDS) + " -n shop",
        "get namespace shop",
        "get nodes",
    ]  # no chaos resources in this cluster
    # each object under its own resource, as one get per resource would give
    for resource, group in (("deployments", "apps"), ("replicasets", "apps"), ("pods", ""), ("services", "")):
        want = sorted(
            o["metadata"]["name"] for o in env.twin.store.list(GroupResource(group, resource), "shop")
        )
        got = cluster.of(resource)
        assert want and sorted(o["metadata"]["name"] for o in got) == want
        assert {o["kind"] for o in got} == {NAMESPACED_KINDS[resource]}


def test_a_resource_the_credential_may_not_list_costs_only_itself(env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    cluster, calls = _read(env, monkeypatch, refuse="networkpolicies")
    assert calls[0].startswith("get deployments,statefulsets,")  # refused as a whole ...
    assert "get networkpolicies -n shop" in calls and "get pods -n shop" in calls  # ... then one by one
    assert cluster.of("networkpolicies") == []
    assert cluster.of("deployments") and cluster.of("pods") and cluster.of("services")
