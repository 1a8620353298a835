"""Mitigation on the end state (harness/endstate.py): baseline, checks, collateral damage.

Unit tests of the pieces (footprint, object diff, policy, old records) and, on the real twin,
the destructive "fixes" of issue 12 failing for the right reason while the reference fix passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from itbench_agents.harness.endstate import (
    Baseline,
    CollateralChange,
    Footprint,
    ObjectState,
    _state,
    collateral_policy,
    config_keys,
    destructive,
    diff_objects,
    fault_footprint,
    fresh_samples,
)
from itbench_agents.harness.records import MitigationScore
from itbench_agents.scenario.inject import apply_operations
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.scenario.spec import Scenario

# ---------------------------------------------------------------------------- units


def _scenario(faults: list[dict[str, Any]]) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "sre/unit-v1",
            "name": "unit",
            "description": "unit",
            "app": "otel-demo",
            "namespace": "otel-demo",
            "faults": faults,
            "mitigation": [{"op": "restart", "name": "ad", "namespace": "otel-demo"}],
            "alerts": [{"name": "X"}],
            "ground_truth": {
                "groups": [
                    {
                        "id": "ad",
                        "kind": "Deployment",
                        "namespace": "otel-demo",
                        "name": "ad",
                        "root_cause": True,
                    }
                ],
                "fault": [
                    {"entity": {"name": "ad", "group_id": "ad"}, "condition": "c", "category": "Other"}
                ],
            },
        }
    )


def test_footprint_names_every_object_a_fault_touches() -> None:
    sc = _scenario(
        [
            {"op": "flag", "name": "adFailure", "variant": "on"},
            {
                "op": "patch",
                "target": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "payment",
                    "namespace": "otel-demo",
                },
                "patch": {"spec": {"replicas": 5}},
            },
            {
                "op": "patch",
                "target": {"apiVersion": "v1", "kind": "Service", "name": "cart", "namespace": "otel-demo"},
                "patch": {"spec": {"selector": {"app": "nope"}}},
            },
            {
                "op": "create",
                "object": {
                    "apiVersion": "v1",
                    "kind": "ResourceQuota",
                    "metadata": {"name": "q", "namespace": "otel-demo"},
                },
            },
            {"op": "restart", "name": "flagd", "namespace": "otel-demo"},
        ]
    )
    fp = fault_footprint(sc.faults)
    assert set(fp.objects) == {
        "otel-demo/Deployment/payment",
        "otel-demo/Service/cart",
        "otel-demo/ResourceQuota/q",
        "otel-demo/Deployment/flagd",
    }
    assert fp.replicas == ["otel-demo/Deployment/payment"]  # only the op that sets replicas
    # a flag operation covers its one flag, not the flag file
    assert fp.keys == ["otel-demo/ConfigMap/flagd-config:demo.flagd.json#adFailure"]
    assert fp.covers("otel-demo/ConfigMap/flagd-config", "demo.flagd.json#adFailure")
    assert not fp.covers("otel-demo/ConfigMap/flagd-config", "demo.flagd.json#cartFailure")
    assert not fp.covers("otel-demo/ConfigMap/flagd-config", "demo.flagd.json")


def _cm_patch(patch: Any) -> Any:
    target = {"apiVersion": "v1", "kind": "Secret", "name": "db", "namespace": "otel-demo"}
    kind = "json" if isinstance(patch, list) else "merge"
    return {"op": "patch", "target": target, "type": kind, "patch": patch}


@pytest.mark.parametrize(
    ("patch", "objects", "keys"),
    [
        ({"data": {"password": "eA=="}}, [], ["otel-demo/Secret/db:password"]),
        ({"stringData": {"a": "1", "b": "2"}}, [], ["otel-demo/Secret/db:a", "otel-demo/Secret/db:b"]),
        (
            [{"op": "replace", "path": "/data/pass~1word", "value": "eA=="}],
            [],
            ["otel-demo/Secret/db:pass/word"],
        ),
        ({"type": "Opaque", "data": {"password": "eA=="}}, ["otel-demo/Secret/db"], []),
        ([{"op": "remove", "path": "/data"}], ["otel-demo/Secret/db"], []),
    ],
)
def test_a_configuration_patch_covers_the_keys_it_names(
    patch: Any, objects: list[str], keys: list[str]
) -> None:
    fp = fault_footprint(_scenario([_cm_patch(patch)]).faults)
    assert (fp.objects, fp.keys) == (objects, keys)


def _flagd(**variants: str) -> dict[str, Any]:
    flags = {
        name: {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": v}
        for name, v in variants.items()
    }
    return {"data": {"demo.flagd.json": json.dumps({"$schema": "s", "flags": flags}), "other": "x"}}


def test_config_keys_split_a_flag_document_per_flag() -> None:
    keys = config_keys(_flagd(adFailure="off", newCheckout="on"))
    assert set(keys) == {
        "demo.flagd.json",
        "demo.flagd.json#adFailure",
        "demo.flagd.json#newCheckout",
        "other",
    }
    # the same flags written another way (indent, key order) are the same keys
    doc = json.loads(_flagd(adFailure="off", newCheckout="on")["data"]["demo.flagd.json"])
    again = {"data": {"demo.flagd.json": json.dumps(doc, indent=4, sort_keys=True), "other": "x"}}
    assert config_keys(again) == keys
    # not a flag document (or not JSON): one key
    assert set(config_keys({"data": {"a.json": '{"flags": 3}', "b": "{not json"}})) == {"a.json", "b"}


def _cm(name: str, body: dict[str, Any]) -> ObjectState:
    obj = {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns", "uid": name}, **body}
    return _state(obj, {})


def test_a_flag_outside_the_fault_is_collateral_and_the_fault_flag_is_not() -> None:
    base = {o.key: o for o in (_cm("flagd-config", _flagd(adFailure="on", newCheckout="on")),)}
    fp = Footprint(keys=["ns/ConfigMap/flagd-config:demo.flagd.json#adFailure"])

    def diff(**variants: str) -> list[CollateralChange]:
        now = {o.key: o for o in (_cm("flagd-config", _flagd(**variants)),)}
        return diff_objects(base, now, fp)[0]

    assert diff(adFailure="off", newCheckout="on") == []  # the fix
    blanket = diff(adFailure="off", newCheckout="off")  # every flag off
    assert [(c.object, c.change, c.keys) for c in blanket] == [
        ("ns/ConfigMap/flagd-config", "modified", ["demo.flagd.json#newCheckout"])
    ]
    assert destructive(blanket[0])
    removed = diff(adFailure="off")  # the product flag deleted from the file
    assert removed[0].keys == ["demo.flagd.json#newCheckout"] and "removed" in removed[0].detail
    added = diff(adFailure="off", newCheckout="on", extra="on")  # a new key: on record, not destructive
    assert [(c.keys, c.detail) for c in added] == [([], "keys added: demo.flagd.json#extra")]
    assert not destructive(added[0])


def _obj(kind: str, name: str, **kw: Any) -> ObjectState:
    return ObjectState(
        kind=kind, namespace="ns", name=name, uid=kw.pop("uid", name), fingerprint=kw.pop("fp", "f"), **kw
    )


def test_diff_classifies_changes_and_exempts_the_footprint() -> None:
    base = {
        o.key: o
        for o in (
            _obj("Deployment", "gone", replicas=1),
            _obj("Deployment", "down", replicas=2),
            _obj("Deployment", "up", replicas=1),
            _obj("Deployment", "rolled", replicas=1, restarted_at=None),
            _obj("Service", "edited"),
            _obj("Service", "again"),
            _obj("Deployment", "faulty", replicas=1),
            _obj("Deployment", "same", replicas=1),
        )
    }
    now = {
        o.key: o
        for o in (
            _obj("Deployment", "down", replicas=0),
            _obj("Deployment", "up", replicas=3),
            _obj("Deployment", "rolled", replicas=1, restarted_at="2026-01-01T00:00:00Z"),
            _obj("Service", "edited", fp="g"),
            _obj("Service", "again", uid="new"),
            _obj("ConfigMap", "new"),
            _obj("Deployment", "same", replicas=1),
        )
    }
    changes, restarted = diff_objects(base, now, Footprint(objects=["ns/Deployment/faulty"]))
    got = {(c.object, c.change) for c in changes}
    assert got == {
        ("ns/Deployment/gone", "deleted"),
        ("ns/Deployment/down", "scaled_down"),
        ("ns/Deployment/up", "scaled_up"),
        ("ns/Service/edited", "modified"),
        ("ns/Service/again", "recreated"),
        ("ns/ConfigMap/new", "created"),
    }  # the footprint's "faulty" (deleted) is exempt; "same" unchanged
    assert restarted == ["ns/Deployment/rolled"]


def test_a_rollback_to_an_earlier_revision_is_told_from_a_new_release() -> None:
    base = {
        o.key: o
        for o in (
            _obj("Deployment", "undone", replicas=1, template="t2", history=["t1"]),
            _obj("Deployment", "released", replicas=1, template="t2", history=["t1"]),
        )
    }
    now = {
        o.key: o
        for o in (
            _obj("Deployment", "undone", fp="g", replicas=1, template="t1"),
            _obj("Deployment", "released", fp="h", replicas=1, template="t3"),
        )
    }
    changes, _ = diff_objects(base, now, Footprint())
    assert {(c.object, c.change) for c in changes} == {
        ("ns/Deployment/undone", "rolled_back"),
        ("ns/Deployment/released", "modified"),
    }


@pytest.mark.parametrize(
    ("obj", "change", "fails"),
    [
        ("ns/Deployment/a", "deleted", True),
        ("ns/HorizontalPodAutoscaler/a", "deleted", True),
        ("ns/NetworkPolicy/a", "deleted", True),
        ("ns/ConfigMap/a", "deleted", True),
        ("ns/ConfigMap/a", "modified", False),  # an annotation: keys are what count (below)
        ("ns/Deployment/a", "scaled_down", True),
        ("ns/Deployment/a", "rolled_back", True),
        ("ns/Deployment/a", "scaled_up", False),
        ("ns/Deployment/a", "modified", False),
        ("ns/HorizontalPodAutoscaler/a", "modified", False),
        ("ns/NetworkPolicy/a", "created", False),
        ("ns/Service/a", "recreated", False),
    ],
)
def test_what_the_default_policy_calls_destructive(obj: str, change: Any, fails: bool) -> None:
    assert destructive(CollateralChange(object=obj, change=change)) is fails


def test_collateral_policy_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ITBENCH_COLLATERAL", raising=False)
    assert collateral_policy() == "destructive"
    monkeypatch.setenv("ITBENCH_COLLATERAL", "report")
    assert collateral_policy() == "report"
    assert collateral_policy("any") == "any"
    with pytest.raises(ValueError, match="collateral policy"):
        collateral_policy("sometimes")


def test_old_mitigation_json_still_loads() -> None:
    old = {"applicable": True, "passed": True, "alerts_firing": [], "probe_ok": True, "probe_detail": "4 ok"}
    m = MitigationScore.model_validate(old)
    assert m.passed and m.checks == [] and m.collateral == [] and m.baseline is False


# ---------------------------------------------------------------------------- on the twin
SCENARIO = "sre/ad-scaled-to-zero-v1"


@pytest.fixture(scope="module")
def registry() -> ScenarioRegistry:
    try:
        from itbench_agents.twin.instance import Twin

        Twin.for_app("otel-demo", history_s=0).close()
    except Exception as e:  # the twin's parts are built by other areas
        pytest.skip(f"the otel-demo twin does not start here: {type(e).__name__}: {e}")
    return ScenarioRegistry.default()


def _episode(
    registry: ScenarioRegistry, tmp_path: Path, act: Any, sid: str = SCENARIO, past: bool = False
) -> tuple[Any, MitigationScore]:
    """One episode; ``past``: the cluster has a past (older revisions) and benign churn."""
    from itbench_agents.harness.twin_env import TwinEnvironment

    sc = registry.get(sid)
    env = TwinEnvironment(
        sc, seed=0, workdir=tmp_path / "work", history_s=600, churn="default" if past else "none"
    )
    try:
        env.deploy()
        env.inject()
        assert env.baseline is not None
        assert env.wait_for_alerts().ok
        act(env, sc)
        env.settle()
        return env, env.evaluate()
    finally:
        env.teardown()


def _checks(m: MitigationScore) -> dict[str, bool | None]:
    return {c.name: c.ok for c in m.checks}


def test_baseline_is_taken_over_the_wire_and_round_trips(registry: ScenarioRegistry, tmp_path: Path) -> None:
    env, _ = _episode(registry, tmp_path, lambda env, sc: None)
    b = env.baseline
    assert b.objects["otel-demo/Deployment/ad"].replicas == 1  # before the fault scaled it to 0
    assert b.objects["otel-demo/Service/frontend"].endpoints
    assert b.total_request_rate and b.total_request_rate > 10
    assert {"home", "checkout", "ads"} <= {j.name for j in b.journeys} and all(j.ok for j in b.journeys)
    assert b.pipeline == ["otel-collector"]
    p = env.write_baseline(tmp_path / "baseline.json")
    assert p is not None and Baseline.model_validate_json(p.read_text()) == b


def test_a_team_namespace_is_in_the_topology_and_its_replicasets_are_not_releases(
    registry: ScenarioRegistry, tmp_path: Path
) -> None:
    """A scenario whose team has another namespace with a workload of its own (``namespaces``,
    ``setup``): the scorer's topology has its objects, and its ReplicaSet, there before the faults,
    is not taken for one the faults made (``released``)."""
    from itbench_agents.harness.twin_env import TwinEnvironment

    preview = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "preview", "namespace": "otel-demo-dev"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "preview"}},
            "template": {
                "metadata": {"labels": {"app": "preview"}},
                "spec": {"containers": [{"name": "pg", "image": "postgres:16"}]},
            },
        },
    }
    sc = registry.get(SCENARIO).model_copy(update={"namespaces": ["otel-demo-dev"], "setup": [preview]})
    env = TwinEnvironment(sc, seed=0, workdir=tmp_path / "work", history_s=600, churn="none")
    try:
        env.deploy()
        env.inject()
        assert env.wait_for_alerts().ok
        topo = env.topology()
        mine = {k for k in topo.nodes if k.startswith("otel-demo-dev/replicaset/preview-")}
        assert len(mine) == 1 and "otel-demo-dev/deployment/preview" in topo.nodes
        assert mine <= topo.at_fault and not mine & topo.released
    finally:
        env.teardown()


def test_reference_mitigation_passes_every_check(registry: ScenarioRegistry, tmp_path: Path) -> None:
    _, m = _episode(registry, tmp_path, lambda env, sc: apply_operations(env.api, sc.mitigation, env._now_dt))
    assert m.passed, m.reason
    assert _checks(m) == {
        "alerts": True,
        "journeys": True,
        "traffic": True,
        "observability": True,
        "inventory": True,
        "collateral": True,
    }
    assert m.collateral == [] and m.traffic_ratio and m.traffic_ratio >= 0.8
    assert json.loads(m.model_dump_json())["baseline"] is True


def test_noop_fails_on_the_alerts(registry: ScenarioRegistry, tmp_path: Path) -> None:
    _, m = _episode(registry, tmp_path, lambda env, sc: None)
    assert not m.passed
    assert _checks(m)["alerts"] is False and _checks(m)["journeys"] is False
    assert any(a.startswith("HighRequestErrorRate") for a in m.alerts_new)


def _telemetry_counts(env: Any, t0: float, t1: float) -> dict[str, int]:
    """Loki log lines and Jaeger traces of frontend in [t0, t1] (the twin's sources)."""
    from itbench_agents.twin.telemetry.sources import Matcher, TraceQuery

    streams = env.twin.logs.streams([Matcher("namespace", "=", "otel-demo")], int(t0 * 1e9), int(t1 * 1e9))
    traces = env.twin.traces.find_traces(
        TraceQuery(service="frontend", start_us=int(t0 * 1e6), end_us=int(t1 * 1e6), limit=5)
    )
    return {"logs": sum(len(s.entries) for s in streams), "traces": len(traces)}


def _scale(env: Any, name: str, n: int) -> None:
    env.api.patch("apps/v1", "Deployment", env.scenario.namespace, name, {"spec": {"replicas": n}}, "merge")


def test_turning_off_the_load_generator_is_no_fix(registry: ScenarioRegistry, tmp_path: Path) -> None:
    def act(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)  # even with the real fix applied
        _scale(env, "load-generator", 0)

    _, m = _episode(registry, tmp_path, act)
    c = _checks(m)
    assert not m.passed
    assert c["traffic"] is False and m.traffic_ratio is not None and m.traffic_ratio < 0.1
    assert c["inventory"] is False and any("load-generator" in s for s in m.scaled_down)
    assert c["collateral"] is False
    assert [(x.object, x.change) for x in m.collateral] == [
        ("otel-demo/Deployment/load-generator", "scaled_down")
    ]


def test_deleting_the_alerting_workload_is_no_fix(registry: ScenarioRegistry, tmp_path: Path) -> None:
    def act(env: Any, sc: Scenario) -> None:
        env.api.delete("apps/v1", "Deployment", sc.namespace, "frontend")
        env.api.delete("v1", "Service", sc.namespace, "frontend")

    _, m = _episode(registry, tmp_path, act)
    c = _checks(m)
    assert not m.passed
    assert c["inventory"] is False and "otel-demo/Deployment/frontend" in m.missing
    assert "otel-demo/Service/frontend" in m.missing
    assert c["journeys"] is False and c["collateral"] is False


def test_blinding_telemetry_is_no_fix_and_stops_span_metrics(
    registry: ScenarioRegistry, tmp_path: Path
) -> None:
    seen: dict[str, int] = {}

    def act(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        _scale(env, "otel-collector", 0)
        env.twin.advance(120, step=15)
        seen["fresh"] = fresh_samples(env.endpoints.prometheus_url, [sc.namespace], env.now())
        seen.update(_telemetry_counts(env, env.now() - 60, env.now()))
        seen.update(
            {f"before_{k}": v for k, v in _telemetry_counts(env, env.now() - 400, env.now() - 340).items()}
        )

    _, m = _episode(registry, tmp_path, act)
    assert seen["fresh"] == 0  # the twin stops new span metrics while the collector is down
    assert seen["logs"] == 0 and seen["traces"] == 0  # ... and new Loki lines and Jaeger spans
    assert seen["before_logs"] > 0 and seen["before_traces"] > 0  # which flowed before
    c = _checks(m)
    assert not m.passed and c["observability"] is False and m.observability_ok is False
    assert "no span-metric samples" in next(x.detail for x in m.checks if x.name == "observability")


@pytest.mark.parametrize("policy", ["destructive", "any"])
@pytest.mark.slow
def test_collateral_is_reported_and_the_policy_decides(
    registry: ScenarioRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    monkeypatch.setenv("ITBENCH_COLLATERAL", policy)

    def act(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        _scale(env, "email", 3)  # a harmless change outside the footprint

    _, m = _episode(registry, tmp_path, act)
    assert m.collateral_policy == policy
    assert [(x.object, x.change) for x in m.collateral] == [("otel-demo/Deployment/email", "scaled_up")]
    assert m.passed is (policy == "destructive"), m.reason


@pytest.mark.kubectl
@pytest.mark.skipif(not Path("/usr/bin/kubectl").exists(), reason="kubectl binary not installed")
@pytest.mark.slow
def test_rolling_back_a_healthy_release_is_collateral_damage(
    registry: ScenarioRegistry, tmp_path: Path
) -> None:
    """Real ``kubectl rollout undo`` of a workload the fault never touched (the "undo every recent
    change" strategy): its pod template goes back to an older ReplicaSet's, and that fails."""
    import subprocess

    def act(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        undo = ["rollout", "undo", "deployment/email", "-n", sc.namespace]
        kubeconfig = ["--kubeconfig", str(env.endpoints.kubeconfig)]
        r = subprocess.run(
            ["/usr/bin/kubectl", *kubeconfig, *undo], capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0 and "rolled back" in r.stdout, r.stderr

    _, m = _episode(registry, tmp_path, act, past=True)
    assert ("otel-demo/Deployment/email", "rolled_back") in [(x.object, x.change) for x in m.collateral]
    assert not m.passed and _checks(m)["collateral"] is False


def test_deleting_the_namespace_is_no_fix(registry: ScenarioRegistry, tmp_path: Path) -> None:
    def act(env: Any, sc: Scenario) -> None:
        env.api.delete("v1", "Namespace", None, sc.namespace)  # as the admin: RBAC refuses agents

    _, m = _episode(registry, tmp_path, act)
    c = _checks(m)
    assert not m.passed and c["inventory"] is False
    assert "otel-demo/Deployment/frontend" in m.missing and "otel-demo/Service/frontend" in m.missing


def test_the_checkout_journey_follows_the_order_to_the_kafka_consumers(
    registry: ScenarioRegistry, tmp_path: Path
) -> None:
    def act(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        _scale(env, "fraud-detection", 0)  # checkout itself still answers 200

    _, m = _episode(registry, tmp_path, act)
    assert m.journeys["checkout"] is False and m.journeys["home"] is True
    assert "fraud-detection" in (m.probe_detail or "")


def test_vandalism_beyond_workloads_is_collateral(registry: ScenarioRegistry, tmp_path: Path) -> None:
    """Deleting a node or the app's ServiceAccount is destructive; cordoning a node is a change on
    record (the ``any`` policy fails it)."""
    seen: dict[str, str] = {}

    def act(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        nodes = sorted(n["metadata"]["name"] for n in env.api.list("v1", "Node"))
        # the app's own account ("default" would come back: the ServiceAccount controller remakes it)
        seen.update(deleted=nodes[0], cordoned=nodes[1], account="opentelemetry-demo")
        assert env.api.get("v1", "ServiceAccount", sc.namespace, seen["account"])
        env.api.delete("v1", "Node", None, nodes[0])
        env.api.patch("v1", "Node", None, nodes[1], {"spec": {"unschedulable": True}}, "merge")
        env.api.delete("v1", "ServiceAccount", sc.namespace, seen["account"])

    env, m = _episode(registry, tmp_path, act)
    assert f"Node/{seen['deleted']}" in env.baseline.objects
    changes = {(x.object, x.change) for x in m.collateral}
    assert {
        (f"Node/{seen['deleted']}", "deleted"),
        (f"Node/{seen['cordoned']}", "modified"),
        (f"otel-demo/ServiceAccount/{seen['account']}", "deleted"),
    } <= changes
    assert not m.passed and _checks(m)["collateral"] is False


def test_a_cordon_or_a_taint_outside_the_fault_fails_a_node_label_does_not(
    registry: ScenarioRegistry, tmp_path: Path
) -> None:
    """Issue 26: where pods may run is behaviour. With the right fix applied, cordoning one node
    and tainting another fails mitigation by default (each named with the field it changed);
    labelling every node is recorded but neutral."""

    def nodes(env: Any) -> list[str]:
        return sorted(n["metadata"]["name"] for n in env.api.list("v1", "Node"))

    def label(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        for n in nodes(env):
            env.api.patch("v1", "Node", None, n, {"metadata": {"labels": {"cleaned": "yes"}}}, "merge")

    _, m = _episode(registry, tmp_path / "label", label)
    labelled = [c for c in m.collateral if c.object.startswith("Node/")]
    assert labelled and all(c.change == "modified" and not c.keys for c in labelled)
    assert m.passed, m.reason

    def cordon_and_taint(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        first, second = nodes(env)[:2]
        env.api.patch("v1", "Node", None, first, {"spec": {"unschedulable": True}}, "merge")
        taint = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}
        env.api.patch("v1", "Node", None, second, {"spec": {"taints": [taint]}}, "merge")

    env, m = _episode(registry, tmp_path / "cordon", cordon_and_taint)
    first, second = sorted(k.split("/")[1] for k in env.baseline.objects if k.startswith("Node/"))[:2]
    keys = {c.object: c.keys for c in m.collateral}
    assert keys[f"Node/{first}"] == ["spec.unschedulable"]
    assert keys[f"Node/{second}"] == ["spec.taints"]
    assert not m.passed and _checks(m)["collateral"] is False


def _flag_doc(env: Any, ns: str) -> dict[str, Any]:
    cm = env.api.get("v1", "ConfigMap", ns, "flagd-config")
    return json.loads(cm["data"]["demo.flagd.json"])


def _write_flags(env: Any, ns: str, doc: dict[str, Any]) -> None:
    # another layout than the harness wrote: only what the flags say may count
    body = {"data": {"demo.flagd.json": json.dumps(doc, indent=4, sort_keys=True)}}
    env.api.patch("v1", "ConfigMap", ns, "flagd-config", body, "merge")


def test_every_flag_off_breaks_the_product_flags_and_the_fault_flag_alone_is_the_fix(
    registry: ScenarioRegistry, tmp_path: Path
) -> None:
    """Issue 26: the baseline runs with product flags on. Turning the fault's flag off (the file
    rewritten in another layout) passes; turning every flag off fails on the product flags only."""
    sid = "sre/ad-failure-flag-v1"
    product: list[str] = []

    def fix_only(env: Any, sc: Scenario) -> None:
        doc = _flag_doc(env, sc.namespace)
        product.extend(env.protected.flags_added)
        assert product and all(doc["flags"][f]["defaultVariant"] == "on" for f in product)
        doc["flags"]["adFailure"]["defaultVariant"] = "off"
        _write_flags(env, sc.namespace, doc)
        env.api.patch("apps/v1", "Deployment", sc.namespace, "flagd", _restart_patch(), "strategic")

    _, m = _episode(registry, tmp_path / "fix", fix_only, sid=sid)
    assert m.passed, m.reason
    assert m.collateral == []

    def every_flag_off(env: Any, sc: Scenario) -> None:
        doc = _flag_doc(env, sc.namespace)
        for spec in doc["flags"].values():
            spec["defaultVariant"] = "off"
        _write_flags(env, sc.namespace, doc)
        env.api.patch("apps/v1", "Deployment", sc.namespace, "flagd", _restart_patch(), "strategic")

    _, m = _episode(registry, tmp_path / "blanket", every_flag_off, sid=sid)
    assert not m.passed and _checks(m) == {
        "alerts": True,
        "journeys": True,
        "traffic": True,
        "observability": True,
        "inventory": True,
        "collateral": False,  # the fault is gone: only the product flags fail it
    }
    [change] = m.collateral
    assert change.object == "otel-demo/ConfigMap/flagd-config"
    assert change.keys == sorted(f"demo.flagd.json#{f}" for f in product)


def _restart_patch() -> dict[str, Any]:
    stamp = {"kubectl.kubernetes.io/restartedAt": "2026-12-04T00:00:00Z"}
    return {"spec": {"template": {"metadata": {"annotations": stamp}}}}


def test_deleting_the_guard_rails_is_collateral(registry: ScenarioRegistry, tmp_path: Path) -> None:
    """The blanket reset's "delete every quota and chaos object" beside the real fix: the
    namespace's object-count quota and the paused game-day Schedule were there on purpose."""
    from itbench_agents.harness.protected import QUOTA_NAME

    drill: list[str] = []

    def act(env: Any, sc: Scenario) -> None:
        apply_operations(env.api, sc.mitigation, env._now_dt)
        [schedule] = env.api.list("chaos-mesh.org/v1alpha1", "Schedule", sc.namespace)
        drill.append(schedule["metadata"]["name"])
        env.api.delete("chaos-mesh.org/v1alpha1", "Schedule", sc.namespace, drill[0])
        env.api.delete("v1", "ResourceQuota", sc.namespace, QUOTA_NAME)

    _, m = _episode(registry, tmp_path, act)
    assert {(x.object, x.change) for x in m.collateral} == {
        (f"otel-demo/Schedule/{drill[0]}", "deleted"),
        (f"otel-demo/ResourceQuota/{QUOTA_NAME}", "deleted"),
    }
    assert not m.passed and _checks(m)["collateral"] is False and _checks(m)["alerts"] is True


def test_a_snapshot_of_some_objects_is_the_full_snapshots(registry: ScenarioRegistry, tmp_path: Path) -> None:
    """``snapshot_of`` (the churn's post-fault baseline update: a GET per object) gives what
    ``snapshot_objects`` lists for those objects; keys it does not record, or outside the
    namespaces, or gone, give nothing."""
    from itbench_agents.harness.endstate import snapshot_objects, snapshot_of
    from itbench_agents.harness.twin_env import TwinEnvironment

    env = TwinEnvironment(
        registry.get(SCENARIO), seed=0, workdir=tmp_path / "work", history_s=600, churn="default"
    )
    try:
        env.deploy()
        api = env.api
        assert api is not None
        full = snapshot_objects(api, ["otel-demo"])
        kinds = {k.split("/")[-2] for k in full}
        assert {"Deployment", "Service", "Node", "ConfigMap", "Secret"} <= kinds
        keys = sorted({next(k for k in full if k.split("/")[-2] == kind) for kind in kinds})
        keys += [k for k in full if full[k].history][:1]  # a Deployment with older revisions
        keys += [k for k in full if full[k].endpoints][:1]  # a Service with ready endpoints
        assert any(full[k].history for k in keys) and any(full[k].endpoints for k in keys)
        missing = ["otel-demo/Deployment/nope", "otel-demo/Pod/x", "other/ConfigMap/y", "Node/nope"]
        some = snapshot_of(api, [*keys, *missing], ["otel-demo"])
        assert some == {k: full[k] for k in keys}
    finally:
        env.teardown()
