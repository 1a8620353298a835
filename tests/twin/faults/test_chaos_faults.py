"""Chaos Mesh experiments served as custom resources and honoured while they exist.

Each kind is created through the store the way ``kubectl apply`` would (after the admission
checks), acts on the pods its selector picks, and stops when deleted, paused or its duration ends.
"""

from __future__ import annotations

from typing import Any

import pytest
from faultkit import PODS, Cluster, healed

from itbench_agents.twin.faults.chaos import CHAOS_GRS, validate_chaos

Obj = dict[str, Any]


def chaos(kind: str, name: str, spec: Obj, ns: str = "chain") -> Obj:
    return {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def sel(app: str, ns: str = "chain", key: str = "app") -> Obj:
    return {"namespaces": [ns], "labelSelectors": {key: app}}


def _partition(src: str, dst: str) -> Obj:
    """A NetworkChaos partition of ``src``'s packets to ``dst`` (direction to)."""
    spec = {"action": "partition", "mode": "all", "selector": sel(src), "direction": "to"}
    return chaos("NetworkChaos", f"{src}-to-{dst}", {**spec, "target": {"selector": sel(dst), "mode": "all"}})


def inject(c: Cluster, obj: Obj) -> None:
    c.create(CHAOS_GRS[obj["kind"]], obj)


def remove(c: Cluster, obj: Obj) -> None:
    c.delete(CHAOS_GRS[obj["kind"]], obj["metadata"]["name"], ns=obj["metadata"]["namespace"])


def test_crds_are_installed(chain: Cluster) -> None:
    from itbench_agents.twin.app.behaviour import CRDS

    names = {c["metadata"]["name"] for c in chain.twin.store.list(CRDS)}
    assert {"networkchaos.chaos-mesh.org", "httpchaos.chaos-mesh.org", "stresschaos.chaos-mesh.org"} <= names
    assert {"podchaos.chaos-mesh.org", "jvmchaos.chaos-mesh.org", "schedules.chaos-mesh.org"} <= names


def test_network_delay_adds_latency_upstream(chain: Cluster) -> None:
    base = chain.p50("a", "GET /work")
    obj = chaos(
        "NetworkChaos",
        "c-delay",
        {"action": "delay", "mode": "all", "selector": sel("c"), "delay": {"latency": "500ms"}},
    )
    inject(chain, obj)
    chain.advance(20)
    assert chain.p50("b", "GET /step") >= 2 * 500, "b calls c twice per request"
    assert chain.p50("a", "GET /work") >= base + 1000
    assert not chain.degraded()
    remove(chain, obj)
    chain.advance(20)
    assert chain.p50("a", "GET /work") == pytest.approx(base)


def test_network_delay_beyond_the_client_timeout_fails_calls(chain: Cluster) -> None:
    obj = chaos(
        "NetworkChaos",
        "c-delay",
        {"action": "delay", "mode": "all", "selector": sel("c"), "delay": {"latency": "20s"}},
    )
    inject(chain, obj)
    chain.advance(20)
    assert chain.degraded() == {"a", "b"}
    assert "deadline_exceeded" in chain.symptoms("b")
    remove(chain, obj)
    healed(chain, 60.0)


def test_network_loss_and_partition(chain: Cluster) -> None:
    loss = chaos(
        "NetworkChaos",
        "b-loss",
        {"action": "loss", "mode": "one", "selector": sel("b"), "loss": {"loss": "99"}},
    )
    inject(chain, loss)
    chain.advance(20)
    assert chain.err("a") > 0.9 and "deadline_exceeded" in chain.symptoms("a")
    remove(chain, loss)
    healed(chain, 60.0)
    part = _partition("b", "c")
    inject(chain, part)
    chain.advance(20)
    assert chain.degraded() == {"a", "b"} and chain.rate("c") == 0
    remove(chain, part)
    healed(chain, 60.0)


def test_a_partition_of_the_callee_toward_its_caller_drops_the_replies(chain: Cluster) -> None:
    """Partition c -> b (direction to): c's packets to b are dropped, so b's calls to c get no
    reply and time out, as a TCP connection needs both ways (ITBench 91: email -> checkout)."""
    part = _partition("c", "b")
    inject(chain, part)
    chain.advance(20)
    assert chain.degraded() == {"a", "b"} and chain.rate("c") == 0
    assert "deadline_exceeded" in chain.symptoms("b")
    remove(chain, part)
    healed(chain, 60.0)


def test_partition_between_other_pods_does_not_touch_this_edge(chain: Cluster) -> None:
    part = _partition("a", "c")
    inject(chain, part)
    chain.advance(20)
    assert not chain.degraded()


@pytest.mark.parametrize(
    ("spec", "symptom"),
    [
        ({"abort": True}, "http_abort"),
        ({"patch": {"body": {"type": "JSON", "value": "not json"}}}, "http_tampered"),
    ],
    ids=["abort", "patch-body"],
)
def test_http_chaos_errors(chain: Cluster, spec: Obj, symptom: str) -> None:
    obj = chaos(
        "HTTPChaos",
        "c-http",
        {
            "mode": "all",
            "selector": sel("c"),
            "target": "Request",
            "port": 8080,
            "method": "GET",
            "path": "/leaf",
            **spec,
        },
    )
    inject(chain, obj)
    chain.advance(20)
    assert chain.degraded() >= {"a", "b"}
    assert symptom in chain.symptoms("b")
    remove(chain, obj)
    healed(chain, 60.0)


def test_http_chaos_delay_and_path_matching(chain: Cluster) -> None:
    other = chaos(
        "HTTPChaos",
        "c-other",
        {"mode": "all", "selector": sel("c"), "target": "Request", "path": "/elsewhere", "abort": True},
    )
    inject(chain, other)
    chain.advance(20)
    assert not chain.degraded(), "a path the service does not serve is not affected"
    slow = chaos(
        "HTTPChaos", "c-slow", {"mode": "all", "selector": sel("c"), "target": "Request", "delay": "1s"}
    )
    inject(chain, slow)
    chain.advance(20)
    assert chain.p50("b", "GET /step") >= 2000
    remove(chain, slow)
    remove(chain, other)
    healed(chain, 60.0)


def test_stress_cpu_throttles(chain: Cluster) -> None:
    base = chain.p50("c", "GET /leaf")
    obj = chaos(
        "StressChaos",
        "c-cpu",
        {"mode": "all", "selector": sel("c"), "stressors": {"cpu": {"workers": 2, "load": 100}}},
    )
    inject(chain, obj)
    chain.advance(20)
    assert chain.p50("c", "GET /leaf") > 5 * base
    assert chain.health()["c"].cpu_cores_per_pod == pytest.approx(0.2)
    remove(chain, obj)
    chain.advance(20)
    assert chain.p50("c", "GET /leaf") == pytest.approx(base)


def test_stress_memory_over_the_limit_oomkills_until_removed(chain: Cluster) -> None:
    obj = chaos(
        "StressChaos",
        "c-mem",
        {"mode": "all", "selector": sel("c"), "stressors": {"memory": {"workers": 4, "size": "100%"}}},
    )
    inject(chain, obj)
    chain.advance(120)
    st = chain.pods("c")[0]["status"]["containerStatuses"][0]
    assert st["restartCount"] >= 1
    assert (st.get("lastState", {}).get("terminated") or {}).get("reason") == "OOMKilled"
    remove(chain, obj)
    healed(chain, 400)


def _unlimited_memory_stress(chain: Cluster, size: str) -> Obj:
    """c without a memory limit, then a memory StressChaos of ``size`` on it for two minutes."""
    chain.container("c", lambda ct: ct["resources"].pop("limits"))
    chain.advance(60)
    obj = chaos(
        "StressChaos",
        "c-mem",
        {"mode": "all", "selector": sel("c"), "stressors": {"memory": {"workers": 10, "size": size}}},
    )
    inject(chain, obj)
    chain.advance(120)
    return obj


def test_stress_memory_without_limits_exhausts_the_node(chain: Cluster) -> None:
    """unassigned-kubernetes-workload-container-resource-limits + memory stress."""
    obj = _unlimited_memory_stress(chain, "95%")
    st = chain.pods("c")[0]["status"]["containerStatuses"][0]
    assert st["restartCount"] >= 1
    assert (st.get("lastState", {}).get("terminated") or {}).get("reason") == "OOMKilled"
    remove(chain, obj)
    chain.container("c", lambda ct: ct["resources"].__setitem__("limits", {"cpu": "200m", "memory": "128Mi"}))
    healed(chain, 400)


def test_stress_memory_without_limits_fails_where_the_node_is_full_not_before(chain: Cluster) -> None:
    """Without a limit a container can take what the node has left: the node's own share and the
    memory the other pods bound to it request. 80% of the node fits on a quiet node; with a
    neighbour that requests 2Gi it does not, and the kernel's OOM killer ends the stressed
    container."""
    _unlimited_memory_stress(chain, "80%")
    (st,) = chain.pods("c")[0]["status"]["containerStatuses"]
    assert st["restartCount"] == 0 and "running" in st["state"]
    node = chain.pods("c")[0]["spec"]["nodeName"]
    neighbour = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "neighbour", "namespace": "chain"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "n",
                    "image": "busybox:1.36",
                    "command": ["sleep", "infinity"],
                    "resources": {"requests": {"memory": "2Gi"}},
                }
            ],
        },
    }
    chain.create(PODS, neighbour)
    # a new pod of c, on the same node
    chain.template("c", lambda t: t.__setitem__("nodeSelector", {"kubernetes.io/hostname": node}))
    chain.advance(120)
    (pod,) = chain.pods("c")
    assert pod["spec"]["nodeName"] == node
    st = pod["status"]["containerStatuses"][0]
    assert st["restartCount"] >= 1
    terminated = st.get("lastState", {}).get("terminated") or {}
    assert terminated.get("reason") == "OOMKilled" and "System OOM" in terminated.get("message", "")


def test_pod_kill_deletes_and_the_replicaset_recreates(chain: Cluster) -> None:
    before = {p["metadata"]["name"] for p in chain.pods("b")}
    inject(chain, chaos("PodChaos", "b-kill", {"action": "pod-kill", "mode": "one", "selector": sel("b")}))
    chain.advance(60)
    after = {p["metadata"]["name"] for p in chain.pods("b")}
    assert before.isdisjoint(after) and len(after) == 1
    assert not chain.degraded()


def test_pod_kill_is_immediate_by_default_and_graceful_with_a_grace_period(chain: Cluster) -> None:
    (first,) = [p["metadata"]["name"] for p in chain.pods("b")]
    inject(chain, chaos("PodChaos", "kill-now", {"action": "pod-kill", "mode": "one", "selector": sel("b")}))
    chain.advance(0.5)
    assert first not in {p["metadata"]["name"] for p in chain.pods("b")}  # gracePeriod 0: gone at once
    chain.advance(30)
    (second,) = [p["metadata"]["name"] for p in chain.pods("b")]
    spec = {"action": "pod-kill", "mode": "one", "gracePeriod": 30, "selector": sel("b")}
    inject(chain, chaos("PodChaos", "kill-gently", spec))
    chain.advance(0.5)
    pod = chain.get(PODS, second)
    assert pod is not None and pod["metadata"]["deletionGracePeriodSeconds"] == 30  # Terminating
    chain.advance(30)
    assert chain.get(PODS, second) is None and len(chain.pods("b")) == 1
    assert not chain.degraded()


def test_pod_failure_stops_serving_for_its_duration(chain: Cluster) -> None:
    inject(
        chain,
        chaos(
            "PodChaos",
            "b-fail",
            {"action": "pod-failure", "mode": "all", "duration": "100s", "selector": sel("b")},
        ),
    )
    chain.advance(30)
    assert chain.degraded() == {"a"} and chain.rate("c") == 0
    obj = chain.get(CHAOS_GRS["PodChaos"], "b-fail")
    assert {c["type"]: c["status"] for c in obj["status"]["conditions"]}["AllInjected"] == "True"
    chain.advance(80)
    assert not chain.degraded(), "the experiment ended after its duration"
    obj = chain.get(CHAOS_GRS["PodChaos"], "b-fail")
    assert {c["type"]: c["status"] for c in obj["status"]["conditions"]}["AllRecovered"] == "True"


def test_container_kill_restarts_once(chain: Cluster) -> None:
    inject(
        chain,
        chaos(
            "PodChaos",
            "c-ck",
            {"action": "container-kill", "mode": "one", "containerNames": ["c"], "selector": sel("c")},
        ),
    )
    chain.advance(60)
    st = chain.pods("c")[0]["status"]["containerStatuses"][0]
    assert st["restartCount"] == 1
    chain.advance(120)
    assert chain.pods("c")[0]["status"]["containerStatuses"][0]["restartCount"] == 1
    assert not chain.degraded()


def test_schedule_creates_children_and_only_pausing_or_deleting_it_fixes(chain: Cluster) -> None:
    inner = {
        "action": "delay",
        "mode": "all",
        "selector": sel("c"),
        "delay": {"latency": "20s"},
        "duration": "55s",
    }
    sched = chaos(
        "Schedule",
        "c-sched",
        {
            "schedule": "* * * * *",
            "type": "NetworkChaos",
            "concurrencyPolicy": "Forbid",
            "historyLimit": 1,
            "networkChaos": inner,
        },
    )
    inject(chain, sched)
    chain.advance(65)
    kids = chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chain")
    assert [k["metadata"]["labels"]["managed-by"] for k in kids] == ["c-sched"]
    assert kids[0]["metadata"]["name"].startswith("c-sched-")
    assert chain.degraded() == {"a", "b"}
    assert (
        chain.get(CHAOS_GRS["Schedule"], "c-sched")["status"]["active"][0]["name"]
        == kids[0]["metadata"]["name"]
    )
    # deleting only the child is no fix: the next tick creates another
    chain.delete(CHAOS_GRS["NetworkChaos"], kids[0]["metadata"]["name"])
    chain.advance(5)
    assert not chain.degraded()
    chain.advance(60)
    assert chain.degraded() == {"a", "b"}
    assert len(chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chain")) == 1, "historyLimit 1"

    def pause(o: Obj) -> None:
        o["metadata"].setdefault("annotations", {})["experiment.chaos-mesh.org/pause"] = "true"

    chain.edit(CHAOS_GRS["Schedule"], "c-sched", pause)
    healed(chain, 180)
    kids = chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chain")
    assert all(k["metadata"]["annotations"]["experiment.chaos-mesh.org/pause"] == "true" for k in kids)
    remove(chain, sched)
    chain.advance(5)
    assert chain.twin.store.list(CHAOS_GRS["NetworkChaos"], "chain") == []


def test_schedule_children_run_for_their_duration_each_period(chain: Cluster) -> None:
    inner = {"action": "partition", "mode": "all", "selector": sel("c"), "duration": "30s"}
    inject(
        chain,
        chaos(
            "Schedule",
            "c-part",
            {"schedule": "@every 60s", "type": "NetworkChaos", "historyLimit": 2, "networkChaos": inner},
        ),
    )
    chain.advance(60)
    t0 = chain.twin.now()
    seen = []
    for _ in range(24):
        chain.advance(5)
        seen.append(bool(chain.degraded()))
    assert any(seen) and not all(seen), "on for 30 s of every minute"
    assert chain.degraded_within(60) == {"a", "b"}
    assert chain.twin.now() - t0 == 120


def test_jvm_chaos_on_a_non_jvm_service_is_ignored(chain: Cluster) -> None:
    inject(chain, chaos("JVMChaos", "c-jvm", {"action": "gc", "mode": "all", "selector": sel("c")}))
    chain.advance(20)
    assert not chain.degraded()
    assert any("not a JVM process" in x for x in chain.twin.behaviour.ignored)


@pytest.mark.parametrize(
    ("spec", "check"),
    [
        (
            {"action": "return", "class": "oteldemo.AdService", "method": "getInstance", "value": "null"},
            "errors",
        ),
        ({"action": "gc"}, "latency"),
        ({"action": "stress", "cpuCount": 2, "memType": "heap"}, "latency"),
    ],
    ids=["return", "gc", "stress"],
)
def test_jvm_chaos_on_ad(otel: Cluster, spec: Obj, check: str) -> None:
    base = otel.p50("ad", "oteldemo.AdService/GetAds")
    obj = chaos(
        "JVMChaos",
        "ad-jvm",
        {"mode": "all", "selector": sel("ad", "otel-demo", "app.kubernetes.io/component"), **spec},
        ns="otel-demo",
    )
    inject(otel, obj)
    otel.advance(30)
    if check == "errors":
        assert {"ad", "frontend", "frontend-proxy"} <= otel.degraded()
        assert "jvm_exception" in otel.symptoms("ad")
    else:
        assert otel.p50("ad", "oteldemo.AdService/GetAds") > base + 200
    remove(otel, obj)
    otel.advance(400)
    assert otel.probe_ok() and not otel.degraded()


def test_network_loss_checkout_to_payment_in_chaos_mesh_namespace(otel: Cluster) -> None:
    """ITBench 61: the experiment lives in namespace chaos-mesh and selects pods in otel-demo."""
    obj = chaos(
        "NetworkChaos",
        "checkout-payment-loss",
        {
            "action": "loss",
            "mode": "all",
            "selector": sel("checkout", "otel-demo", "app.kubernetes.io/component"),
            "direction": "to",
            "target": {"mode": "all", "selector": sel("payment", "otel-demo", "app.kubernetes.io/component")},
            "loss": {"loss": "100"},
            "duration": "55s",
        },
        ns="chaos-mesh",
    )
    inject(otel, obj)
    otel.advance(20)
    assert otel.err("checkout") > 0.9 and otel.rate("payment") == 0
    assert "checkout" in otel.degraded() and "ad" not in otel.degraded()
    otel.advance(60)
    assert not otel.degraded(), "duration 55s elapsed"
    remove(otel, obj)


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (
            chaos("NetworkChaos", "x", {"action": "explode", "mode": "all", "selector": sel("c")}),
            "spec.action",
        ),
        (
            chaos("NetworkChaos", "x", {"action": "delay", "mode": "all", "selector": sel("c")}),
            "spec.delay.latency",
        ),
        (
            chaos(
                "NetworkChaos",
                "x",
                {"action": "loss", "mode": "all", "selector": sel("c"), "loss": {"loss": "150"}},
            ),
            "spec.loss.loss",
        ),
        (
            chaos("PodChaos", "x", {"action": "pod-kill", "mode": "sometimes", "selector": sel("c")}),
            "spec.mode",
        ),
        (
            chaos(
                "PodChaos",
                "x",
                {"action": "pod-kill", "mode": "one", "selector": sel("c"), "duration": "ten minutes"},
            ),
            "spec.duration",
        ),
        (chaos("PodChaos", "x", {"action": "pod-kill", "mode": "one"}), "spec.selector"),
        (chaos("HTTPChaos", "x", {"mode": "all", "selector": sel("c"), "target": "Request"}), "spec.abort"),
        (chaos("StressChaos", "x", {"mode": "all", "selector": sel("c"), "stressors": {}}), "spec.stressors"),
        (
            chaos(
                "StressChaos",
                "x",
                {
                    "mode": "all",
                    "selector": sel("c"),
                    "stressors": {"memory": {"workers": 1, "size": "lots"}},
                },
            ),
            "spec.stressors.memory.size",
        ),
        (chaos("Schedule", "x", {"schedule": "* * * * *", "type": "KernelChaos"}), "spec.type"),
    ],
)
def test_nonsense_chaos_specs_get_422_causes(obj: Obj, field: str) -> None:
    causes = validate_chaos(obj)
    assert causes, obj
    assert field in [c[0] for c in causes]


def test_nonsense_chaos_is_rejected_through_the_api(chain: Cluster, tmp_path) -> None:  # noqa: ANN001
    import json
    import urllib.error
    import urllib.request

    ep = chain.twin.serve(tmp_path)
    try:
        url = f"{ep.kube_url}/apis/chaos-mesh.org/v1alpha1/namespaces/chain/networkchaos"
        body = json.dumps(
            chaos("NetworkChaos", "bad", {"action": "explode", "mode": "all", "selector": sel("c")})
        ).encode()
        req = urllib.request.Request(
            url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 422
        status = json.loads(err.value.read())
        assert status["reason"] == "Invalid"
        assert status["details"]["causes"][0]["field"] == "spec.action"
        good = json.dumps(
            chaos(
                "NetworkChaos",
                "ok",
                {"action": "delay", "mode": "all", "selector": sel("c"), "delay": {"latency": "10ms"}},
                ns="chaos-mesh",
            )
        ).encode()
        url = f"{ep.kube_url}/apis/chaos-mesh.org/v1alpha1/namespaces/chaos-mesh/networkchaos"
        req = urllib.request.Request(
            url, data=good, method="POST", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 201
    finally:
        chain.twin.close()
    assert chain.twin.store.list(PODS, "chain")
