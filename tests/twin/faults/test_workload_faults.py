"""Kubernetes workload and network faults on the 3-service chain (load → a → b → c).

Each test: inject through the API store → advance the clock → check pod states / events, which
services degrade and which do not → apply a valid fix → health and the functional probe return.
"""

from __future__ import annotations

import pytest
from faultkit import DEPLOYMENTS, NETPOLS, SERVICES, Cluster, healed

BAD_IMAGE = "registry.local/chain/b:9.9-does-not-exist"


def test_nonexistent_image_keeps_old_pod_serving_then_recreate_breaks_callers(chain: Cluster) -> None:
    chain.container("b", lambda ct: ct.__setitem__("image", BAD_IMAGE))
    chain.advance(60)
    assert "ImagePullBackOff" in chain.statuses("b") or "ErrImagePull" in chain.statuses("b")
    assert "Running/Ready" in chain.statuses("b"), "rolling update keeps the old pod"
    assert any("not found" in m and BAD_IMAGE in m for m in chain.events("Failed"))
    assert not chain.degraded()
    # the variant where the old pod is gone: callers fail, c gets no traffic
    chain.recreate_strategy("b")
    chain.advance(60)
    assert chain.statuses("b") in (["ImagePullBackOff"], ["ErrImagePull"])
    assert chain.degraded() == {"a"}
    assert "connection_refused" in chain.symptoms("a")
    assert chain.rate("c") == 0.0
    assert not chain.probe_ok()
    chain.container("b", lambda ct: ct.__setitem__("image", "registry.local/chain/b:1.0"))
    healed(chain, 120.0)


def test_unsupported_architecture_crash_loops_with_exec_format_error(chain: Cluster) -> None:
    chain.recreate_strategy("c")
    chain.container("c", lambda ct: ct.__setitem__("image", "quay.io/it-bench/hello-bench-arm64:2.0.0"))
    chain.advance(120)
    assert chain.statuses("c") in (["CrashLoopBackOff"], ["Error"])
    pod = chain.pods("c")[0]
    last = pod["status"]["containerStatuses"][0].get("lastState", {}).get("terminated") or pod["status"][
        "containerStatuses"
    ][0]["state"].get("terminated")
    assert "exec format error" in (last.get("message") or "")
    assert chain.degraded() == {"a", "b"}
    chain.container("c", lambda ct: ct.__setitem__("image", "registry.local/chain/c:1.0"))
    healed(chain, 400)


def test_multi_platform_index_without_the_node_platform_fails_the_pull(chain: Cluster) -> None:
    from itbench_agents.twin.app.model import Image

    pod = chain.pods("c")[0]
    beh = chain.twin.behaviour
    beh.catalogue.append(
        Image(repo="registry.local/chain/c-arm", tags=["1"], arch=["arm64"], platform_index=True)
    )
    ct = {**pod["spec"]["containers"][0], "image": "registry.local/chain/c-arm:1"}
    v = chain.twin.runtime.verdict(pod, ct, init=False, node=None, now=chain.twin.now())
    assert v.pull_error is not None and "no match for platform in manifest" in v.pull_error
    arm = {"metadata": {"labels": {"kubernetes.io/arch": "arm64"}}}
    assert chain.twin.runtime.verdict(pod, ct, init=False, node=arm, now=chain.twin.now()).pull_error is None


def test_scaled_to_zero(chain: Cluster) -> None:
    chain.scale("c", 0)
    chain.advance(30)
    assert chain.pods("c") == []
    assert chain.degraded() == {"a", "b"}
    assert "connection_refused" in chain.symptoms("b")
    assert chain.health()["c"].ready_pods == 0 and chain.rate("c") == 0
    chain.scale("c", 1)
    healed(chain, 120.0)


@pytest.mark.parametrize(
    ("change", "symptom"),
    [
        (lambda s: s["spec"]["ports"][0].__setitem__("targetPort", 9999), "connection_refused"),
        (
            lambda s: s["spec"]["selector"].__setitem__("app.kubernetes.io/name", "invalid-workload-1"),
            "connection_refused",
        ),
    ],
    ids=["wrong-targetPort", "invalid-selector"],
)
def test_service_misconfiguration(chain: Cluster, change, symptom) -> None:  # noqa: ANN001
    original = chain.get(SERVICES, "b")
    chain.edit(SERVICES, "b", change)
    chain.advance(30)
    assert chain.degraded() == {"a"}
    assert symptom in chain.symptoms("a")
    assert chain.rate("b") == 0 and chain.rate("c") == 0, "no traffic downstream of the broken hop"
    assert chain.statuses("b") == ["Running/Ready"], "the pods themselves are fine"
    chain.edit(SERVICES, "b", lambda s: s.__setitem__("spec", original["spec"]))
    healed(chain, 120.0)


def test_deleted_service_gives_dns_errors(chain: Cluster) -> None:
    original = chain.get(SERVICES, "c")
    chain.delete(SERVICES, "c")
    chain.advance(30)
    assert chain.degraded() == {"a", "b"}
    assert "dns_no_such_host" in chain.symptoms("b")
    assert "no such host" in chain.messages("b")
    spec = {k: v for k, v in original["spec"].items() if k not in ("clusterIP", "clusterIPs")}
    chain.create(SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "c"}, "spec": spec})
    healed(chain, 120.0)


def test_network_policy_denying_ingress_times_out_callers(chain: Cluster) -> None:
    chain.create(
        NETPOLS,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "b-ingress"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "b"}},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": []}],
            },
        },
    )
    chain.advance(30)
    assert chain.degraded() == {"a"}
    assert "deadline_exceeded" in chain.symptoms("a")
    assert chain.p50("a", "GET /work") >= 5000, "calls hang until a's 5 s client timeout"
    assert chain.rate("b") == 0
    chain.delete(NETPOLS, "b-ingress")
    healed(chain, 120.0)


def test_network_policy_allowing_the_caller_is_harmless(chain: Cluster) -> None:
    chain.create(
        NETPOLS,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "b-from-a"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "b"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}]}],
            },
        },
    )
    chain.advance(30)
    assert not chain.degraded()


def test_modified_env_var_address(chain: Cluster) -> None:
    chain.container("b", lambda ct: ct["env"].__setitem__(1, {"name": "C_ADDR", "value": "c:0000"}))
    chain.advance(60)
    assert chain.degraded() == {"a", "b"}
    assert chain.rate("c") == 0
    chain.container("b", lambda ct: ct["env"].__setitem__(1, {"name": "C_ADDR", "value": "c:8080"}))
    healed(chain, 120.0)


def test_required_env_var_removed_crash_loops(chain: Cluster) -> None:
    chain.recreate_strategy("a")
    chain.container("a", lambda ct: ct.__setitem__("env", [e for e in ct["env"] if e["name"] != "B_ADDR"]))
    chain.advance(90)
    assert chain.statuses("a") in (["CrashLoopBackOff"], ["Error"])
    assert not chain.probe_ok()
    chain.container("a", lambda ct: ct["env"].append({"name": "B_ADDR", "value": "b:8080"}))
    healed(chain, 400)


def test_corrupted_secret_needs_restore_and_restart(chain: Cluster) -> None:
    chain.set_secret("c-credentials", "password", "x7k2q9")
    chain.advance(30)
    assert not chain.degraded(), "running processes keep the password they started with"
    chain.restart_pods("b")
    chain.advance(60)
    assert chain.degraded() == {"a", "b"}
    assert "auth_failed" in chain.symptoms("b")
    chain.set_secret("c-credentials", "password", "chain-secret")
    chain.advance(30)
    assert chain.degraded() == {"a", "b"}, "restoring the Secret alone does not reach the running pod"
    chain.restart_pods("b")
    healed(chain, 120.0)


def test_missing_secret_key_is_create_container_config_error(chain: Cluster) -> None:
    chain.recreate_strategy("b")
    chain.container(
        "b",
        lambda ct: ct["env"].__setitem__(
            2, {"name": "C_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "c-credentials", "key": "nope"}}}
        ),
    )
    chain.advance(60)
    assert chain.statuses("b") == ["CreateContainerConfigError"]
    assert any("couldn't find key nope in Secret chain/c-credentials" in m for m in chain.events())
    assert chain.degraded() == {"a"}
    chain.container(
        "b",
        lambda ct: ct["env"].__setitem__(
            2,
            {
                "name": "C_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": "c-credentials", "key": "password"}},
            },
        ),
    )
    healed(chain, 120.0)


def test_failing_dns_policy(chain: Cluster) -> None:
    chain.template("a", lambda spec: spec.update(dnsPolicy="None", dnsConfig={"nameservers": ["8.8.8.8"]}))
    chain.advance(60)
    assert chain.degraded() == {"a"}
    assert "dns_no_such_host" in chain.symptoms("a")
    assert chain.rate("b") == 0
    chain.template("a", lambda spec: (spec.pop("dnsConfig"), spec.__setitem__("dnsPolicy", "ClusterFirst")))
    healed(chain, 120.0)


def test_bad_container_command(chain: Cluster) -> None:
    chain.recreate_strategy("c")
    chain.container("c", lambda ct: ct.__setitem__("command", ["invalid-command"]))
    chain.advance(120)
    assert chain.statuses("c")[0] in ("CrashLoopBackOff", "RunContainerError", "StartError")
    assert any(
        'exec: "invalid-command": executable file not found in $PATH' in m for m in chain.events("Failed")
    )
    assert chain.degraded() == {"a", "b"}
    chain.container("c", lambda ct: ct.pop("command"))
    healed(chain, 400)


def test_hanging_init_container(chain: Cluster) -> None:
    chain.recreate_strategy("b")
    chain.template(
        "b",
        lambda spec: spec.__setitem__(
            "initContainers",
            [
                {
                    "name": "worker",
                    "image": "registry.access.redhat.com/ubi9/ubi-minimal:latest",
                    "command": ["sleep", "infinity"],
                }
            ],
        ),
    )
    chain.advance(120)
    pod = chain.pods("b")[0]
    assert pod["status"]["phase"] == "Pending"
    assert "running" in pod["status"]["initContainerStatuses"][0]["state"]
    assert chain.degraded() == {"a"}
    chain.template("b", lambda spec: spec.pop("initContainers"))
    healed(chain, 120.0)


def test_crashing_init_container(chain: Cluster) -> None:
    from faultkit import CONFIGMAPS

    chain.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "b-config"},
            "data": {
                "config": "{not json",
                "script": "import json; json.load(open('/opt/app-root/src/config/config'))",
            },
        },
    )
    chain.recreate_strategy("b")

    def add_init(spec: dict) -> None:
        spec["volumes"] = [{"name": "cfg", "configMap": {"name": "b-config"}}]
        spec["initContainers"] = [
            {
                "name": "worker",
                "image": "registry.access.redhat.com/ubi9/python-311:latest",
                "command": ["python", "/opt/app-root/src/config/script"],
                "volumeMounts": [{"name": "cfg", "mountPath": "/opt/app-root/src/config"}],
            }
        ]

    chain.template("b", add_init)
    chain.advance(120)
    st = chain.pods("b")[0]["status"]["initContainerStatuses"][0]
    assert (st["state"].get("waiting") or {}).get("reason") == "CrashLoopBackOff" or "terminated" in st[
        "state"
    ]
    assert any("Back-off restarting failed container worker" in m for m in chain.events("BackOff"))
    assert chain.degraded() == {"a"}
    chain.template("b", lambda spec: (spec.pop("initContainers"), spec.pop("volumes")))
    healed(chain, 120.0)


@pytest.mark.parametrize("kind", ["readiness", "liveness"])
def test_bad_probe(chain: Cluster, kind: str) -> None:
    chain.recreate_strategy("b")
    probe = {"httpGet": {"path": "/ready", "port": 40}, "periodSeconds": 5, "failureThreshold": 3}
    chain.container("b", lambda ct: ct.__setitem__(f"{kind}Probe", probe))
    chain.advance(180)
    msgs = chain.events("Unhealthy")
    assert any(
        f"{kind.capitalize()} probe failed" in m and ":40/ready" in m and "connection refused" in m
        for m in msgs
    )
    if kind == "readiness":
        assert chain.statuses("b") == ["Running/NotReady"]
    else:
        assert any("failed liveness probe, will be restarted" in m for m in chain.events("Killing"))
    assert "a" in chain.degraded() or kind == "liveness"
    chain.container("b", lambda ct: ct.pop(f"{kind}Probe"))
    healed(chain, 400)


def test_good_readiness_probe_is_harmless(chain: Cluster) -> None:
    chain.container(
        "b", lambda ct: ct.__setitem__("readinessProbe", {"httpGet": {"path": "/healthz", "port": "http"}})
    )
    chain.advance(120)
    assert chain.statuses("b") == ["Running/Ready"]
    assert not chain.degraded()


def test_cpu_limit_throttling_slows_the_path(chain: Cluster) -> None:
    before = chain.p50("a", "GET /work")
    chain.container("c", lambda ct: ct["resources"]["limits"].__setitem__("cpu", "2m"))
    chain.advance(60)
    assert chain.p50("c", "GET /leaf") > 3 * 2.0
    assert chain.p50("a", "GET /work") > before, "latency adds up the path"
    assert "cpu_throttled" in chain.symptoms("c")
    chain.container("c", lambda ct: ct["resources"]["limits"].__setitem__("cpu", "200m"))
    chain.advance(60)
    assert chain.p50("a", "GET /work") == pytest.approx(before)


def test_insufficient_memory_limit_oomkills(chain: Cluster) -> None:
    chain.recreate_strategy("c")
    chain.container("c", lambda ct: ct["resources"]["limits"].__setitem__("memory", "5Mi"))
    chain.advance(120)
    cs = chain.pods("c")[0]["status"]["containerStatuses"][0]
    term = cs.get("lastState", {}).get("terminated") or cs["state"].get("terminated") or {}
    assert term.get("reason") == "OOMKilled" and term.get("exitCode") == 137
    assert chain.degraded() == {"a", "b"}
    chain.container("c", lambda ct: ct["resources"]["limits"].__setitem__("memory", "128Mi"))
    healed(chain, 400)


def test_rollout_undo_style_fix_restores_previous_template(chain: Cluster) -> None:
    """Any fix that restores the cause works: here re-applying the previous template wholesale."""
    previous = chain.get(DEPLOYMENTS, "b")["spec"]["template"]
    chain.recreate_strategy("b")
    chain.container("b", lambda ct: ct.__setitem__("image", BAD_IMAGE))
    chain.advance(60)
    assert chain.degraded() == {"a"}
    chain.edit(DEPLOYMENTS, "b", lambda d: d["spec"].__setitem__("template", previous))
    healed(chain, 120.0)
