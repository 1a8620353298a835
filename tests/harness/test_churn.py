"""Benign churn (harness/churn.py) and the twin's past (twin/history.py)."""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import pytest

from itbench_agents.harness.churn import (
    ChurnPlan,
    Protection,
    answer_deployments,
    churn_mode,
    collisions,
    plan_churn,
    releases,
    upstream_of,
)
from itbench_agents.harness.churn_lookalikes import NEW_FLAGS
from itbench_agents.harness.endstate import fault_footprint
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.twin.app.loader import load_app
from itbench_agents.twin.history import plan_history

SEEDS = range(6)
LOOKALIKE_APIS = {
    "NetworkChaos": "chaos-mesh.org/v1alpha1",
    "Schedule": "chaos-mesh.org/v1alpha1",
    "CronJob": "batch/v1",
    "Job": "batch/v1",
}


class ManifestApi:
    """The read side of ``KubeApi`` over an app's manifests (plus three nodes)."""

    def __init__(self, manifests: list[dict[str, Any]], namespace: str) -> None:
        self.objs = [copy.deepcopy(o) for o in manifests]
        for o in self.objs:
            o.setdefault("metadata", {}).setdefault("namespace", namespace)
        self.objs += [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"}} for i in range(3)
        ]

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [
            o
            for o in self.objs
            if o.get("kind") == kind and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]


_APPS: dict[str, Any] = {}


def _app(name: str) -> Any:
    if name not in _APPS:
        _APPS[name] = load_app(name)
    return _APPS[name]


def _edges(model: Any) -> list[tuple[str, str]]:
    services = model.behaviour.services
    return [
        (svc.workload or n, services[d].workload or d)
        for n, svc in services.items()
        for d in (svc.dependencies or {})
        if d in services
    ]


def _plan(scenario: Any, seed: int) -> ChurnPlan:
    model = _app(scenario.app)
    api = cast(Any, ManifestApi(model.manifests, scenario.namespace))
    return plan_churn(scenario, api, seed, edges=_edges(model), image_ok=lambda image: ":2.1.3-" in image)


def _library() -> list[Any]:
    return list(ScenarioRegistry.default().all())


def test_churn_mode_parses():
    assert churn_mode(None) == "default"
    assert churn_mode("NONE") == "none"
    with pytest.raises(ValueError, match="churn must be one of"):
        churn_mode("lots")


def test_plan_is_seeded_and_varies():
    sc = ScenarioRegistry.default().get("sre/payment-failure-flag-v1")
    plans = [json.dumps(_plan(sc, s).describe(), sort_keys=True) for s in SEEDS]
    assert plans == [json.dumps(_plan(sc, s).describe(), sort_keys=True) for s in SEEDS]
    assert len(set(plans)) >= 4  # the seed changes the plan


def test_none_plans_nothing():
    sc = ScenarioRegistry.default().get("sre/payment-failure-flag-v1")
    model = _app(sc.app)
    plan = plan_churn(sc, cast(Any, ManifestApi(model.manifests, sc.namespace)), 1, "none")
    assert plan.changes == [] and plan.mode == "none"


def test_a_faulty_release_is_not_the_last_rollout():
    """A fault that rolls out a root-cause Deployment is followed by a benign restart of another
    Deployment (a new ReplicaSet, the newest: the audit's ``audit-newest-rollout`` names it), or the
    plan says why none could be made (pod placement is the fault's). Right answers include the
    aliases of a root cause (the restarted reader of a corrupted Secret)."""
    seen = 0
    for sc in _library():
        if not releases(sc):
            continue
        roots = answer_deployments(sc)
        assert roots, sc.id
        for seed in SEEDS:
            plan = _plan(sc, seed)
            last = plan.changes[-1] if plan.changes else None
            if last is not None and last.kind == "rollout-restart" and last.phase == "after":
                assert last.target.split("/")[-1] not in roots, (sc.id, seed)
                seen += 1
            else:
                assert any(n.startswith("rollout-restart (after the release): ") for n in plan.skipped), (
                    sc.id,
                    seed,
                )
    assert seen >= 20 * len(SEEDS)  # most releases get one


@pytest.mark.parametrize(
    "sid",
    [
        "sre/payment-pod-anti-affinity-v1",  # the faulty pods' own scheduling: nothing else moves them
        "sre/ad-cart-nonexistent-node-selector-v1",
        "sre/postgresql-corrupted-secret-v1",  # the restarted reader is aliased with the Secret
    ],
)
def test_these_releases_are_followed_by_a_benign_one(sid: str) -> None:
    sc = next(s for s in _library() if s.id == sid)
    assert releases(sc)
    for seed in SEEDS:
        last = _plan(sc, seed).changes[-1]
        assert (last.kind, last.phase) == ("rollout-restart", "after"), (sid, seed)
        assert not Protection.of(sc).names_workload(last.target.split("/")[-1]), (sid, seed)


def test_every_plan_of_the_library_stays_off_the_footprint():
    """1–3 changes, both sides of the fault when there are several, never an object the fault's
    operations touch (endstate's footprint) nor a workload the ground truth names."""
    kinds_seen: set[str] = set()
    phases_seen: set[str] = set()
    for sc in _library():
        footprint = set(fault_footprint([*sc.faults, *sc.mitigation]).objects)
        gt = {g.name for g in sc.ground_truth.groups if g.name}
        for seed in SEEDS:
            plan = _plan(sc, seed)
            # 1-3 drawn changes, and after a faulty release one restart more, the last (below)
            extra = releases(sc) and not any(n.startswith("rollout-restart (after the") for n in plan.skipped)
            # the scenario's own red herrings come first, before the fault, beside the drawn ones
            herrings = [c for c in plan.changes if c.kind == "red-herring"]
            assert plan.changes[: len(herrings)] == herrings and len(herrings) == len(sc.red_herrings)
            assert all(c.phase == "before" for c in herrings)
            changes = plan.changes[len(herrings) :]
            drawn = changes[:-1] if extra else changes
            assert 1 <= len(drawn) <= 3, (sc.id, seed, plan.skipped)
            if len(drawn) >= 2:
                assert {c.phase for c in drawn} == {"before", "after"}, (sc.id, seed)
            assert len(plan.pre_gaps_s) == len(plan.before)
            assert collisions(plan, sc) == []
            for c in plan.changes:
                kinds_seen.add(c.kind)
                phases_seen.add(c.phase)
                assert c.target not in footprint, (sc.id, seed, c.describe())
                kind, name = c.target.split("/")[-2:]
                if kind in ("Deployment", "HorizontalPodAutoscaler"):
                    assert name not in gt, (sc.id, seed, c.describe())
                if kind == "NetworkPolicy":
                    assert not any(
                        op.op == "create" and op.object["kind"] == "NetworkPolicy" for op in sc.faults
                    )
    assert phases_seen == {"before", "after"}
    assert {"rollout-env", "rollout-restart", "hpa", "configmap"} <= kinds_seen


def test_collisions_are_reported():
    sc = ScenarioRegistry.default().get("sre/payment-failure-flag-v1")
    plan = _plan(sc, 0)
    forged = copy.deepcopy(plan)
    forged.changes[0].target = "otel-demo/ConfigMap/flagd-config"  # the flag fault's ConfigMap
    assert collisions(forged, sc) and "flagd-config" in collisions(forged, sc)[0]


def test_upstream_is_transitive():
    edges = [("a", "b"), ("b", "c"), ("x", "y")]
    assert upstream_of({"c"}, edges) == {"a", "b"}
    assert upstream_of({"y"}, edges) == {"x"}


# ---------------------------------------------------------------------------- history
def test_history_plan_is_seeded_within_the_window():
    model = _app("otel-demo")
    ok = lambda image: "2.1.3" in image or "2.0.2" in image  # noqa: E731
    a = plan_history(model.manifests, app="otel-demo", seed=4, history_s=3600, image_ok=ok)
    b = plan_history(model.manifests, app="otel-demo", seed=4, history_s=3600, image_ok=ok)
    c = plan_history(model.manifests, app="otel-demo", seed=5, history_s=3600, image_ok=ok)
    assert a.describe() == b.describe() and a.describe() != c.describe()
    assert len({r.deployment for r in a.rollouts}) >= 5
    assert all(180 <= r.at_s <= 0.6 * 3600 for r in a.rollouts)
    assert not any(r.deployment in ("postgresql", "kafka", "flagd", "otel-collector") for r in a.rollouts)
    # the first applied template differs from the manifest exactly for the rolled workloads
    rolled = {r.deployment for r in a.rollouts}
    for orig, first in zip(model.manifests, a.initial, strict=True):
        if orig.get("kind") == "Deployment":
            changed = orig["spec"]["template"] != first["spec"]["template"]
            assert changed == (orig["metadata"]["name"] in rolled)
    # the last rollout of each workload brings back the manifest's template
    for name in rolled:
        last = [r for r in a.rollouts if r.deployment == name][-1]
        manifest = next(
            o for o in model.manifests if o["metadata"]["name"] == name and o["kind"] == "Deployment"
        )
        assert last.template == manifest["spec"]["template"]


def test_no_room_no_history():
    model = _app("otel-demo")
    assert plan_history(model.manifests, app="otel-demo", seed=1, history_s=100).rollouts == []


# ---------------------------------------------------------------------------- on the twin
def _store_dump(twin: Any) -> list[tuple[str, str, str, str, str]]:
    from itbench_agents.k8s.kinds import GroupResource

    out = []
    for gr in (
        GroupResource("apps", "deployments"),
        GroupResource("apps", "replicasets"),
        GroupResource("", "pods"),
        GroupResource("", "events"),
    ):
        for o in twin.store.list(gr, "otel-demo"):
            m = o["metadata"]
            out.append(
                (
                    gr.resource,
                    m["name"],
                    m["creationTimestamp"],
                    json.dumps(o.get("spec"), sort_keys=True),
                    m["uid"],
                )
            )
    return sorted(out)


@pytest.mark.slow
def test_twin_with_a_past_is_deterministic_and_varied():
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.controllers.kinds import PODS, REPLICASETS
    from itbench_agents.twin.instance import Twin

    a = Twin.for_app("otel-demo", seed=3, clock=ManualClock(), history_s=600, past=True)
    b = Twin.for_app("otel-demo", seed=3, clock=ManualClock(), history_s=600, past=True)
    assert _store_dump(a) == _store_dump(b)
    assert cast(Any, a).history_plan.describe() == cast(Any, b).history_plan.describe()
    rs_per_deploy: dict[str, int] = {}
    for rs in a.store.list(REPLICASETS, "otel-demo"):
        owner = rs["metadata"]["ownerReferences"][0]["name"]
        rs_per_deploy[owner] = rs_per_deploy.get(owner, 0) + 1
    assert sum(1 for n in rs_per_deploy.values() if n > 1) >= 5  # several Deployments have old revisions
    assert rs_per_deploy["postgresql"] == 1  # state is not rolled
    ages = {p["metadata"]["creationTimestamp"] for p in a.store.list(PODS, "otel-demo")}
    assert len(ages) >= 5  # pods of different ages
    # and the app settled healthy (kube-prometheus' Watchdog, severity none, always fires)
    assert [x.name for x in a.alerts.active(a.now()) if x.labels.get("severity") != "none"] == []
    assert all(j.ok for j in a.behaviour.journeys())


@pytest.mark.slow
def test_episode_churn_is_applied_through_the_api(tmp_path):
    from itbench_agents.harness.endstate import snapshot_objects
    from itbench_agents.harness.twin_env import TwinEnvironment

    sc = ScenarioRegistry.default().get("sre/payment-failure-flag-v1")
    seed = next(s for s in range(40) if len(_plan(sc, s).changes) == 3)
    env = TwinEnvironment(sc, seed=seed, workdir=tmp_path, history_s=600, churn="default")
    try:
        env.deploy()
        env.inject()
        plan = env.churn_plan
        assert plan is not None and len(plan.changes) == 3 and plan.before and plan.after
        assert plan.unexplained_alerts() == []
        assert env.baseline is not None and all(j.ok for j in env.baseline.journeys)
        assert env.injected_at is not None
        for c in plan.before:
            assert c.applied_at is not None and c.applied_at < env.injected_at
        for c in plan.after:
            assert c.applied_at is not None and c.applied_at > env.injected_at
        api = env.api
        assert api is not None
        for c in plan.changes:
            kind, name = c.target.split("/")[-2:]
            if kind == "Deployment":
                tpl = api.get("apps/v1", "Deployment", sc.namespace, name)["spec"]["template"]
                c0 = tpl["spec"]["containers"][0]
                if c.kind == "rollout-env":
                    assert any(e["name"] == "LOG_LEVEL" for e in c0.get("env", [])), c.detail
                elif c.kind == "rollout-image":
                    assert c0["image"] in c.detail
                else:
                    assert "kubectl.kubernetes.io/restartedAt" in tpl["metadata"].get("annotations", {})
            elif kind == "HorizontalPodAutoscaler":
                assert api.get("autoscaling/v2", kind, sc.namespace, name)
            elif kind == "NetworkPolicy":
                assert api.get("networking.k8s.io/v1", kind, sc.namespace, name)
            elif kind == "ConfigMap" and c.kind == "flag-on":
                data = api.get("v1", kind, sc.namespace, name)["data"]["demo.flagd.json"]
                assert any(f'"{f}"' in data for f in NEW_FLAGS), c.detail
            elif kind == "ConfigMap":
                ann = api.get("v1", kind, sc.namespace, name)["metadata"].get("annotations", {})
                assert "platform.example.com/reviewed-by" in ann
            elif kind in LOOKALIKE_APIS:
                assert api.get(LOOKALIKE_APIS[kind], kind, sc.namespace, name), c.detail
            else:
                assert kind == "Node"
                labels = api.get("v1", "Node", None, name)["metadata"]["labels"]
                assert any(k.startswith("infra.example.com/") for k in labels)
        # the harness's own post-fault changes are part of the baseline, not collateral damage
        now = snapshot_objects(api, [sc.namespace])
        for c in plan.after:
            if c.target in now:
                assert env.baseline.objects[c.target].fingerprint == now[c.target].fingerprint
        check = env.wait_for_alerts()
        assert check.ok, check.missing
    finally:
        env.teardown()


@pytest.mark.slow
def test_the_faulty_release_is_recorded_and_names_its_deployment(tmp_path):
    """The ReplicaSets made between the injection and the alerts are recorded with the episode's
    topology: the fault's release (a right answer: its Deployment) and the benign restart that
    follows it (wrong, like the ReplicaSet the fault replaced)."""
    from itbench_agents.core.output import Diagnosis, DiagnosisEntity
    from itbench_agents.evaluation.diagnosis import score_diagnosis
    from itbench_agents.harness.twin_env import TwinEnvironment

    sc = ScenarioRegistry.default().get("sre/payment-regression-image-rollout-v1")
    assert releases(sc)
    env = TwinEnvironment(sc, seed=0, workdir=tmp_path, history_s=600, churn="default")
    try:
        env.deploy()
        env.inject()
        assert env.wait_for_alerts().ok
        plan = env.churn_plan
        assert plan is not None and plan.changes[-1].kind == "rollout-restart"
        benign = plan.changes[-1].target.split("/")[-1]
        topo = env.topology()
        owner = {
            b.rsplit("/", 1)[1]: a.rsplit("/", 1)[1]
            for a, b, t in topo.edges
            if t == "owns" and "/replicaset/" in b
        }
        released = {k.rsplit("/", 1)[1] for k in topo.released}
        # the release rolls out ad, email, payment and quote (payment's build is the bad one),
        # then the churn rolls out others, the restart last
        assert {owner[r] for r in released} >= {"ad", "email", "payment", "quote", benign}, released
        older = [r for r, d in owner.items() if d == "payment" and r not in released]
        assert older  # the healthy releases the fault replaced

        def correct(rs: str) -> bool:
            name = f"{sc.namespace}/ReplicaSet/{rs}"
            d = Diagnosis(entities=[DiagnosisEntity(name=name, contributing_factor=True)])
            return score_diagnosis(sc.ground_truth, d, topo).correct

        assert {owner[r] for r in released if correct(r)} == {"payment"}
        assert not any(correct(r) for r in older)
    finally:
        env.teardown()


@pytest.mark.slow
def test_benign_log_lines_only_on_a_twin_with_a_past():
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.controllers.kinds import PODS
    from itbench_agents.twin.instance import Twin

    def benign(twin: Any) -> list[str]:
        out = []
        for p in twin.store.list(PODS, "otel-demo"):
            for c in p["spec"]["containers"]:
                for line in twin.logs.pod_log("otel-demo", p["metadata"]["name"], c["name"]).splitlines():
                    if (
                        "cache refreshed:" in line
                        or "connection pool stats:" in line
                        or "slow operation" in line
                    ):
                        out.append(line)
        return out

    quiet = Twin.for_app("otel-demo", seed=5, clock=ManualClock(), history_s=600)
    past = Twin.for_app("otel-demo", seed=5, clock=ManualClock(), history_s=600, past=True)
    again = Twin.for_app("otel-demo", seed=5, clock=ManualClock(), history_s=600, past=True)
    assert benign(quiet) == []
    lines = benign(past)
    assert len(lines) >= 5
    assert lines == benign(again)


def _with_herring(sc: Any, target: str) -> Any:
    from itbench_agents.scenario.spec import Scenario

    doc = sc.model_dump(mode="json")
    doc["red_herrings"] = [{"op": "restart", "kind": "Deployment", "name": target, "namespace": sc.namespace}]
    return Scenario.model_validate(doc)


def test_red_herrings_are_planned_first_even_with_churn_off():
    sc = _with_herring(ScenarioRegistry.default().get("sre/payment-failure-flag-v1"), "email")
    model = _app(sc.app)
    off = plan_churn(sc, cast(Any, ManifestApi(model.manifests, sc.namespace)), 2, "none")
    assert [c.kind for c in off.changes] == ["red-herring"] and off.changes[0].phase == "before"
    assert off.changes[0].target == "otel-demo/Deployment/email" and len(off.pre_gaps_s) == 1
    on = _plan(sc, 2)
    assert on.changes[0].kind == "red-herring" and len(on.changes) >= 2
    assert collisions(on, sc) == []


def test_a_red_herring_on_the_footprint_is_an_error():
    from pydantic import ValidationError

    sc = ScenarioRegistry.default().get("sre/payment-failure-flag-v1")
    restarted = next(op for op in sc.faults if op.op == "restart")  # the flag fault restarts flagd
    with pytest.raises(ValidationError, match="collides with the fault's footprint"):
        _with_herring(sc, restarted.name)  # type: ignore[union-attr]


LOOKALIKE_SCENARIOS = (
    "sre/ad-failure-flag-v1",
    "sre/accounting-scaled-to-zero-v1",
    "sre/control-hotel-reservation-healthy-v1",
    "sre/ad-jvm-heap-stress-v1",
)


def _with_lookalike(kind: str) -> tuple[Any, int]:
    """The first (scenario, seed) of LOOKALIKE_SCENARIOS whose plan has a ``kind`` look-alike."""
    reg = ScenarioRegistry.default()
    for seed in range(40):
        for sid in LOOKALIKE_SCENARIOS:
            sc = reg.get(sid)
            if any(c.kind == kind for c in _plan(sc, seed).changes):
                return sc, seed
    raise AssertionError(f"no plan with {kind}")


@pytest.mark.parametrize("kind", ["chaos-recovered", "chaos-paused", "flag-on", "cronjob", "job-failed"])
@pytest.mark.slow
def test_a_lookalike_is_harmless_and_the_reference_fix_still_passes(kind: str, tmp_path: Any) -> None:
    """Each look-alike of a fault signature is what it claims on a real twin, leaves the app
    healthy at the baseline, and the scenario's reference fix still passes every end-state check."""
    from itbench_agents.core.task import Limits
    from itbench_agents.harness.twin_env import TwinEnvironment
    from itbench_agents.k8s.client import KubeApi
    from itbench_agents.scenario.inject import apply_operations

    sc, seed = _with_lookalike(kind)
    env = TwinEnvironment(sc, seed=seed, workdir=tmp_path, history_s=600, churn="default")
    try:
        env.deploy()
        env.inject()
        plan, api, base = env.churn_plan, env.api, env.baseline
        assert plan is not None and api is not None and base is not None
        change = next(c for c in plan.changes if c.kind == kind)
        ns, k, name = change.target.split("/")
        assert plan.unexplained_alerts() == [], plan.describe()
        assert all(j.ok for j in base.journeys), [j.name for j in base.journeys if not j.ok]
        if kind == "chaos-recovered":
            obj = api.get("chaos-mesh.org/v1alpha1", k, ns, name)
            conds = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
            assert conds["AllRecovered"] == "True", conds
        elif kind == "chaos-paused":
            children = [
                o
                for ck in ("PodChaos", "NetworkChaos")
                for o in api.list("chaos-mesh.org/v1alpha1", ck, ns)
                if (o["metadata"].get("labels") or {}).get("managed-by") == name
            ]
            assert api.get("chaos-mesh.org/v1alpha1", k, ns, name) and children == []
        elif kind == "flag-on":
            assert any(f'"{f}"' in api.get("v1", k, ns, name)["data"]["demo.flagd.json"] for f in NEW_FLAGS)
        elif kind == "job-failed":
            job = api.get("batch/v1", k, ns, name)
            assert any(c["type"] == "Failed" for c in job["status"]["conditions"]), job["status"]
            planted = [a for a in plan.planted_alerts if a.startswith("FailedPodsDetected{")]
            assert planted and all(a in base.alerts_active for a in planted), (
                plan.describe(),
                base.alerts_active,
            )
        env.wait_for_alerts()
        task = env.task(Limits())
        agent_api = KubeApi.from_kubeconfig(env.endpoints.kube_url, task.endpoints.kubeconfig)
        apply_operations(agent_api, sc.mitigation, env._now_dt)
        env.settle()
        mit = env.evaluate()
        assert mit.passed, mit.reason
        if kind == "cronjob":
            env.twin.advance(330, step=env.step_s)
            jobs = [
                j
                for j in api.list("batch/v1", "Job", ns)
                if any(r.get("name") == name for r in j["metadata"].get("ownerReferences") or [])
            ]
            done = [
                j
                for j in jobs
                if any(c["type"] == "Complete" for c in (j.get("status") or {}).get("conditions") or [])
            ]
            assert done, [j.get("status") for j in jobs]
    finally:
        env.teardown()


@pytest.mark.slow
def test_a_dependency_that_came_up_late_leaves_startup_restarts() -> None:
    """A fatal dependency applied late at install crash-loops its clients for a while; the kept
    client shows the restarts and the BackOff events an hour later, and everything is ready."""
    from itbench_agents.k8s.kinds import GroupResource
    from itbench_agents.twin.clock import ManualClock
    from itbench_agents.twin.history import fatal_dependants, plan_late_dependencies
    from itbench_agents.twin.instance import Twin

    deps = fatal_dependants(_app("otel-demo").behaviour.services)
    assert deps["postgresql"] == ["product-catalog"] and "kafka" in deps
    assert plan_late_dependencies(deps, app="otel-demo", seed=0, history_s=200) == []
    seed = next(
        s
        for s in range(20)
        if "postgresql"
        in {d.workload for d in plan_late_dependencies(deps, app="otel-demo", seed=s, history_s=3600)}
    )
    tw = Twin.for_app("otel-demo", seed=seed, clock=ManualClock(), history_s=3600, past=True)
    tw.sync()
    pods = tw.store.list(GroupResource("", "pods"), "otel-demo")
    assert all(c.get("ready") for p in pods for c in (p.get("status") or {}).get("containerStatuses") or [])
    restarted = {
        p["metadata"]["name"]
        for p in pods
        for c in (p.get("status") or {}).get("containerStatuses") or []
        if c.get("restartCount", 0) >= 1
    }
    assert any(n.startswith("product-catalog-") for n in restarted), restarted
    backoff = [
        e
        for e in tw.store.list(GroupResource("", "events"), "otel-demo")
        if e.get("reason") == "BackOff" and e["involvedObject"]["name"] in restarted
    ]
    assert backoff
