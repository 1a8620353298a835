"""The protected baseline (harness/protected.py): seeded, off the scenario's footprint, deployed
with the app, and quiet."""

from __future__ import annotations

import copy

from itbench_agents.harness.protected import ARCHIVE_CLAIM, HA_REPLICAS, QUOTA_NAME, egress_guard, plan
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.twin.app.loader import load_app


def test_the_plan_is_seeded_and_stays_off_what_the_scenario_names() -> None:
    from itbench_agents.harness.churn import Protection

    reg = ScenarioRegistry.default()
    manifests = {app: load_app(app).manifests for app in ("otel-demo", "hotel-reservation")}
    targets = set()
    for sc in reg.all():
        for seed in (0, 1):
            p = plan(sc, seed, copy.deepcopy(manifests[sc.app]))
            assert p.describe() == plan(sc, seed, copy.deepcopy(manifests[sc.app])).describe()
            kinds = [o["kind"] for o in p.objects]
            deny, allow = p.objects[-2:]
            assert kinds[-2:] == ["NetworkPolicy", "NetworkPolicy"], sc.id
            assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Egress"]}  # default-deny egress
            assert allow["spec"]["policyTypes"] == ["Egress"] and len(allow["spec"]["egress"]) == 2
            kinds = kinds[:-2]
            if sc.persona == "finops":  # what a cost cutter must not break (below)
                assert kinds[4:] == [
                    "HorizontalPodAutoscaler",
                    "CronJob",
                    "PersistentVolume",
                    "PersistentVolumeClaim",
                ], sc.id
                kinds = kinds[:4]
            else:
                assert not p.replicas, sc.id
            assert kinds == ["ResourceQuota", "LimitRange", "Schedule", "PodDisruptionBudget"], sc.id
            quota, limits, drill, budget = p.objects[:4]
            assert limits["spec"]["limits"] == [
                {"type": "PersistentVolumeClaim", "max": {"storage": "500Gi"}}
            ]
            assert quota["metadata"]["name"] == QUOTA_NAME and int(quota["spec"]["hard"]["pods"]) >= 100
            assert drill["metadata"]["annotations"]["experiment.chaos-mesh.org/pause"] == "true"
            target = drill["metadata"]["name"].removeprefix("gameday-").removesuffix("-latency")
            assert not Protection.of(sc).names_workload(target), (sc.id, target)
            assert budget["metadata"]["name"] == f"{target}-pdb" and budget["spec"]["maxUnavailable"] == 1
            assert budget["spec"]["selector"] == next(
                o["spec"]["selector"]
                for o in manifests[sc.app]
                if o["kind"] == "Deployment" and o["metadata"]["name"] == target
            )
            targets.add(target)
    assert len(targets) > 5  # not one workload every time


def test_finops_apps_run_a_workload_highly_available_and_a_suspended_cronjob() -> None:
    """What a blind cost cutter breaks (the FinOps audit): one workload the scenario does not name at
    two replicas under an HPA that keeps them, and the quarter-end CronJob, suspended."""
    from itbench_agents.harness.churn import Protection

    manifests = load_app("otel-demo").manifests
    finops = [sc for sc in ScenarioRegistry.default().all() if sc.persona == "finops"]
    assert len(finops) >= 17
    chosen = set()
    for sc in finops:
        p = plan(sc, 0, copy.deepcopy(manifests))
        hpa, cron, volume, claim = p.objects[4:-2]
        ((name, replicas),) = p.replicas.items()
        assert replicas == HA_REPLICAS and not Protection.of(sc).names_workload(name), sc.id
        assert hpa["spec"]["scaleTargetRef"]["name"] == name and hpa["spec"]["minReplicas"] == HA_REPLICAS
        assert cron["spec"]["suspend"] is True
        # the close's archive: a claim bound to its volume, mounted only while the close runs
        assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
        assert volume["spec"]["claimRef"]["name"] == claim["metadata"]["name"] == ARCHIVE_CLAIM
        pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == ARCHIVE_CLAIM
        assert "otel-demo/PersistentVolumeClaim/" + ARCHIVE_CLAIM in p.describe()["objects"]
        deployed = p.customize(copy.deepcopy(manifests))
        dep = next(o for o in deployed if o["kind"] == "Deployment" and o["metadata"]["name"] == name)
        assert dep["spec"]["replicas"] == HA_REPLICAS
        assert "otel-demo/HorizontalPodAutoscaler/" + name in p.describe()["objects"]
        chosen.add(name)
    assert len(chosen) > 3  # not one workload every time


def test_the_app_is_deployed_with_it_and_nothing_fires(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from itbench_agents.harness.twin_env import TwinEnvironment

    sc = ScenarioRegistry.default().get("sre/control-otel-demo-healthy-v1")
    env = TwinEnvironment(sc, seed=0, workdir=tmp_path / "work", history_s=600, churn="none")
    try:
        env.deploy()
        assert env.protected is not None and len(env.protected.flags_added) >= 2
        env.inject()
        assert env.wait_for_alerts().ok
        objects = env.baseline.objects  # type: ignore[union-attr]
        keys = env.protected.describe()["objects"]
        assert all(k in objects for k in keys), keys
        flags = objects["otel-demo/ConfigMap/flagd-config"].keys
        assert all(f"demo.flagd.json#{f}" in flags for f in env.protected.flags_added)
        api = env.api
        assert api is not None
        # created with the app, not a recent change
        app_created = api.get("apps/v1", "Deployment", "otel-demo", "frontend")["metadata"][
            "creationTimestamp"
        ]
        quota = api.get("v1", "ResourceQuota", "otel-demo", QUOTA_NAME)
        assert quota["metadata"]["creationTimestamp"] == app_created
        assert quota["status"]["used"]["pods"] != "0"
        # the drilled workload's disruption budget, kept by the disruption controller
        [budget] = api.list("policy/v1", "PodDisruptionBudget", "otel-demo")
        assert budget["metadata"]["creationTimestamp"] == app_created
        assert budget["status"]["expectedPods"] >= 1 and budget["status"]["disruptionsAllowed"] == 1
        # the paused drill spawned nothing; the healthy app raised nothing
        assert api.list("chaos-mesh.org/v1alpha1", "NetworkChaos", "otel-demo") == []
        assert env.baseline.alerts_active == []  # type: ignore[union-attr]
    finally:
        env.teardown()


def test_the_egress_guard_lets_the_app_reach_itself_and_dns_and_nothing_else() -> None:
    """The default-deny egress and its allow, by the twin's NetworkPolicy semantics: a pod reaches
    any pod of its namespace and CoreDNS on port 53, not another namespace's pods nor CoreDNS on
    another port; without the allow, nothing (a blind clean-up that deletes the deny-style one is
    collateral damage, not a fix). Ingress stays open: an ingress fault still bites."""
    from itbench_agents.twin.app import netpol
    from itbench_agents.twin.app.network import COREDNS

    policies = egress_guard("shop")
    labels = {"shop": {"kubernetes.io/metadata.name": "shop"}, "kube-system": {"kubernetes.io/metadata.name": "kube-system"}}  # fmt: skip
    cart = netpol.Endpoint("shop", {"app": "cart"}, "10.244.1.5")
    ad = netpol.Endpoint("shop", {"app": "ad"}, "10.244.1.6")
    other = netpol.Endpoint("billing", {"app": "ledger"}, "10.244.2.7")

    def allowed(
        pols: list[dict], src: netpol.Endpoint, dst: netpol.Endpoint, port: int, proto: str = "TCP"
    ) -> bool:
        return netpol.allowed(lambda ns: pols if ns == "shop" else [], labels.get, src, dst, port, proto)  # type: ignore[arg-type]

    assert allowed(policies, cart, ad, 8080)
    assert allowed(policies, cart, COREDNS, 53, "UDP") and allowed(policies, cart, COREDNS, 53)
    assert not allowed(policies, cart, COREDNS, 9153)
    assert not allowed(policies, cart, other, 8080)
    assert not allowed(policies[:1], cart, ad, 8080)  # the deny alone
    assert allowed([], cart, other, 8080)
    assert allowed(policies, other, cart, 8080)  # ingress is not isolated
