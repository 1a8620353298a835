"""The live backend (``harness/live_backend.py``): the same scenarios on a cluster the user runs,
over public APIs only. A twin served as a live cluster stands in for one here (``itbench twin serve
--speed``: its own clock, running faster than the wall; nothing twin-only is used)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.core.endpoints import Endpoints, kubeconfig_cluster
from itbench_agents.harness.backend_check import check_backend
from itbench_agents.harness.live_backend import (
    ENDPOINTS_ENV,
    LiveBackend,
    LiveBackendError,
    apply_manifests,
    restore_nodes,
    sweep_created_since,
)
from itbench_agents.k8s.client import KubeApi
from itbench_agents.twin.clock import scaled_wall
from itbench_agents.twin.serve import running_twin

runner = CliRunner()
SPEED = 60.0
"""Cluster seconds per wall second of the live twin: alert waits of minutes take seconds."""


@pytest.fixture
def live_hotel(tmp_path: Path) -> Iterator[Path]:
    """hotel-reservation on a twin served as a live cluster; yields its endpoints file."""
    with running_twin(
        app="hotel-reservation", history_s=1200.0, speed=SPEED, workdir=tmp_path / "cluster"
    ) as twin:
        assert twin.endpoints is not None
        path = tmp_path / "live.json"
        twin.endpoints.write(path)
        yield path


def _admin(endpoints: Path) -> KubeApi:
    return KubeApi.from_kubeconfig(None, Endpoints.read(endpoints).kubeconfig)


def _verdicts(run_dir: Path) -> dict[tuple[str, str], tuple[bool, bool]]:
    out = {}
    for line in (run_dir / "episodes.jsonl").read_text().splitlines():
        r = json.loads(line)
        out[(r["scenario_id"], r["agent"])] = (
            bool((r.get("diagnosis") or {}).get("correct")),
            bool((r.get("mitigation") or {}).get("passed")),
        )
    return out


def _live_run(tmp_path: Path, scenario: str, *more: str) -> Any:
    """``itbench run -s SCENARIO --agent noop --backend live --endpoints live.json`` in this process."""
    args = ["run", "-s", scenario, "--agent", "noop", "--backend", "live"]
    return runner.invoke(
        app, [*args, "--endpoints", str(tmp_path / "live.json"), *more, "--run-dir", str(tmp_path / "r")]
    )


def _itbench_run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "itbench"), "run", *args, "--no-report"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )


@pytest.mark.slow
def test_a_live_run_scores_as_the_twin_and_leaves_the_cluster_as_it_found_it(
    live_hotel: Path, tmp_path: Path
) -> None:
    scenarios = ["sre/hotel-geo-scaled-to-zero-v1", "sre/hotel-user-network-loss-v1"]
    picks = [a for s in scenarios for a in ("-s", s)] + [
        "--agent",
        "oracle",
        "--agent",
        "noop",
        "--history-s",
        "600",
    ]
    api = _admin(live_hotel)
    nodes_before = {n["metadata"]["name"]: n["spec"] for n in api.list("v1", "Node")}
    live = _itbench_run(
        [*picks, "--backend", "live", "--run-dir", str(tmp_path / "live")], {ENDPOINTS_ENV: str(live_hotel)}
    )
    assert live.returncode == 0, live.stdout + live.stderr
    twin = _itbench_run([*picks, "--run-dir", str(tmp_path / "twin")], {})
    assert twin.returncode == 0, twin.stdout + twin.stderr
    on_live, on_twin = _verdicts(tmp_path / "live"), _verdicts(tmp_path / "twin")
    assert len(on_live) == 4 and on_live == on_twin
    for (_, agent), (diagnosis, mitigation) in on_live.items():
        assert (diagnosis, mitigation) == ((True, True) if agent == "oracle" else (False, False))
    # the last episode was noop's on the network loss: its NetworkChaos and geo at zero are gone
    assert api.get("apps/v1", "Deployment", "hotel-reservation", "geo")["spec"]["replicas"] == 1
    assert not api.list("chaos-mesh.org/v1alpha1", "NetworkChaos", "hotel-reservation")
    assert not [
        sa
        for sa in api.list("v1", "ServiceAccount", "hotel-reservation")
        if "itbench" in sa["metadata"]["name"]
    ]
    assert {n["metadata"]["name"]: n["spec"] for n in api.list("v1", "Node")} == nodes_before


@pytest.mark.slow
def test_the_live_backend_passes_check_backend(live_hotel: Path) -> None:
    report = check_backend(lambda: LiveBackend(live_hotel), app="hotel-reservation")
    assert report.ok, report.render()
    names = [c.name for c in report.checks]
    assert "close restores the cluster" in names and "close stops the endpoints" not in names


def test_teardown_deletes_what_was_created_puts_the_manifests_back_and_restores_the_nodes(
    tmp_path: Path,
) -> None:
    manifests = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "flags", "namespace": "shop"},
            "data": {"a": "off"},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    ]
    with running_twin(workdir=tmp_path / "c") as twin:
        assert twin.endpoints is not None
        api = KubeApi.from_kubeconfig(None, twin.endpoints.kubeconfig)
        assert apply_manifests(api, manifests) == []
        ip = api.get("v1", "Service", "shop", "web")["spec"]["clusterIP"]
        nodes = {n["metadata"]["name"]: n for n in api.list("v1", "Node")}
        from itbench_agents.harness.live_backend import _node_state

        before = {name: _node_state(n) for name, n in nodes.items()}
        twin.advance(2.0)
        since = twin.now()
        twin.advance(1.0)
        # an episode: a flag turned on, a quota and a Secret created, the Service deleted, a node cordoned and labelled
        api.patch("v1", "ConfigMap", "shop", "flags", {"data": {"a": "on"}}, patch_type="merge")
        api.create(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "q", "namespace": "shop"},
                "spec": {"hard": {"pods": "1"}},
            }
        )
        api.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop"}})
        api.delete("v1", "Service", "shop", "web")
        node = next(iter(nodes))
        api.patch(
            "v1",
            "Node",
            None,
            node,
            {"spec": {"unschedulable": True}, "metadata": {"labels": {"x": "y"}}},
            patch_type="merge",
        )
        twin.sync()
        problems = sweep_created_since(api, since, manifests)
        problems += apply_manifests(api, manifests, keep_going=True)
        problems += restore_nodes(api, before)
        assert problems == []
        twin.sync()
        assert api.get("v1", "ConfigMap", "shop", "flags")["data"] == {"a": "off"}
        assert not api.exists("v1", "ResourceQuota", "shop", "q")
        assert not api.exists("v1", "Secret", "shop", "s")
        assert api.exists("v1", "Service", "shop", "web")
        assert api.exists("v1", "ConfigMap", "shop", "kube-root-ca.crt")  # made before: kept
        after = {n["metadata"]["name"]: _node_state(n) for n in api.list("v1", "Node")}
        assert after == before
        # a replace of a Service that is there keeps the address the API server gave it
        twin.advance(1.0)
        assert apply_manifests(api, manifests) == []
        assert api.get("v1", "Service", "shop", "web")["spec"]["clusterIP"] != ""
        assert ip


def test_the_live_backend_says_what_is_missing_before_any_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENDPOINTS_ENV, "")  # and put back as it was: `--endpoints` sets it for the workers
    env = {ENDPOINTS_ENV: ""}
    r = runner.invoke(
        app,
        [
            "run",
            "-s",
            "sre/hotel-geo-scaled-to-zero-v1",
            "--agent",
            "noop",
            "--backend",
            "live",
            "--run-dir",
            str(tmp_path / "r"),
        ],
        env=env,
    )
    assert r.exit_code == 2 and "needs the cluster's endpoints file" in r.output
    assert not (tmp_path / "r").exists()
    # an endpoints file whose cluster does not answer
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    ep = Endpoints(
        kubeconfig=str(kubeconfig), kube_url="http://127.0.0.1:9", prometheus_url="http://127.0.0.1:9"
    )
    ep.write(tmp_path / "live.json")
    r = _live_run(tmp_path, "sre/hotel-geo-scaled-to-zero-v1")
    assert r.exit_code == 2 and "cannot reach the API server" in r.output, r.output
    assert not (tmp_path / "r").exists()
    # a scenario whose persona needs a system beside the app (FinOps: OpenCost)
    r = _live_run(tmp_path, "finops/accounting-hpa-minimum-pinned-high-v1")
    assert (
        r.exit_code == 2 and "does not install systems beside the app" in r.output and "opencost" in r.output
    )
    # --endpoints is for the live backend only
    args = ["run", "-s", "sre/hotel-geo-scaled-to-zero-v1", "--agent", "noop"]
    r = runner.invoke(
        app, [*args, "--endpoints", str(tmp_path / "live.json"), "--run-dir", str(tmp_path / "r")]
    )
    assert r.exit_code == 2 and "--endpoints is for --backend live" in r.output
    # from the environment it is no error: a user who exported it runs the twin as before
    monkeypatch.setenv(ENDPOINTS_ENV, str(tmp_path / "live.json"))
    r = runner.invoke(app, ["run", "-s", "sre/nope-v1", "--agent", "noop", "--run-dir", str(tmp_path / "r")])
    assert r.exit_code == 2 and "--endpoints" not in r.output and "unknown scenario" in r.output
    with pytest.raises(LiveBackendError, match="not an endpoints file"):
        (tmp_path / "bad.json").write_text('{"kube_url": 1}')
        LiveBackend(tmp_path / "bad.json")


def test_a_scaled_wall_runs_faster_from_the_moment_it_is_made() -> None:
    t = [1000.0]
    wall = scaled_wall(30.0, wall=lambda: t[0])
    assert wall() == 1000.0
    t[0] = 1002.0
    assert wall() == 1060.0
    assert scaled_wall(1.0) is time.time
    with pytest.raises(ValueError):
        scaled_wall(0.0)


def test_a_kubeconfig_with_a_ca_file_gives_the_agents_kubeconfig_its_data(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n")
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {
                        "name": "kind",
                        "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"},
                    }
                ],
                "contexts": [{"name": "kind", "context": {"cluster": "kind", "user": "u"}}],
                "current-context": "kind",
            }
        )
    )
    server, ca = kubeconfig_cluster(kc)
    assert server == "https://127.0.0.1:6443"
    assert ca is not None and base64.b64decode(ca).startswith(b"-----BEGIN CERTIFICATE-----")


def test_without_chaos_mesh_its_scenarios_are_skipped_with_why_and_its_baseline_objects_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from itbench_agents.harness.backend import ProvisionRequest

    monkeypatch.setenv(ENDPOINTS_ENV, "")
    with running_twin(
        workdir=tmp_path / "c"
    ) as twin:  # a bare cluster, no Chaos Mesh: the backend deploys the app
        assert twin.endpoints is not None
        twin.endpoints.write(tmp_path / "live.json")
        r = _live_run(tmp_path, "sre/hotel-user-network-loss-v1")
        assert r.exit_code == 2, r.output
        assert "skipped sre/hotel-user-network-loss-v1: the cluster does not serve NetworkChaos" in r.output
        assert "no chosen scenario can run on this cluster" in r.output
        # one cluster, one episode at a time
        r = _live_run(tmp_path, "sre/hotel-geo-scaled-to-zero-v1", "--concurrency", "2")
        assert r.exit_code == 2 and "one at a time on one cluster" in r.output, r.output
        assert not (tmp_path / "r").exists()
        backend = LiveBackend(tmp_path / "live.json")
        drill = {
            "apiVersion": "chaos-mesh.org/v1alpha1",
            "kind": "Schedule",
            "metadata": {"name": "gameday", "namespace": "chain"},
            "spec": {"schedule": "@weekly", "type": "NetworkChaos"},
        }
        quota = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "chain"},
            "spec": {"hard": {"pods": "50"}},
        }
        request = ProvisionRequest(
            app="chain",
            seed=0,
            history_s=0.0,
            folder=tmp_path / "h",
            customize=lambda m: [*m, drill, quota],
        )
        endpoints = backend.provision(request)
        assert Path(endpoints.kubeconfig).is_file() and (tmp_path / "h" / "endpoints.json").is_file()
        assert backend.left_out == ["Schedule gameday"]
        api = backend.admin_api()
        assert api.exists("v1", "ResourceQuota", "chain", "q")
        assert ("chaos-mesh.org/v1alpha1", "Schedule") not in backend.served_kinds()
        backend.close()
        assert not api.exists("v1", "ResourceQuota", "chain", "q")  # the episode's addition, gone
        assert api.exists("apps/v1", "Deployment", "chain", "a")  # the app stays for the next episode


def test_a_scenario_the_kubeconfig_may_not_inject_is_skipped_with_the_rbac_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from itbench_agents.core.endpoints import kubeconfig_yaml
    from itbench_agents.harness.access import grant_access

    monkeypatch.setenv(ENDPOINTS_ENV, "")
    with running_twin(workdir=tmp_path / "c") as twin:
        assert twin.endpoints is not None
        admin = KubeApi.from_kubeconfig(None, twin.endpoints.kubeconfig)
        read_only = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
        token = grant_access(admin, "itbench-viewer", read_only)
        server, ca = kubeconfig_cluster(twin.endpoints.kubeconfig)
        (tmp_path / "viewer").write_text(kubeconfig_yaml(server, token=token, ca_data=ca))
        twin.endpoints.model_copy(update={"kubeconfig": str(tmp_path / "viewer")}).write(
            tmp_path / "live.json"
        )
        r = _live_run(tmp_path, "sre/hotel-geo-scaled-to-zero-v1")
        assert r.exit_code == 2, r.output
        assert (
            "skipped sre/hotel-geo-scaled-to-zero-v1: the kubeconfig's user may not patch deployments.apps "
            "in hotel-reservation" in r.output
        )
        assert not (tmp_path / "r").exists()


def test_a_task_with_a_second_namespace_waits_for_it_to_be_ready_and_close_deletes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scenario that deploys a team's other namespace with the app (``namespaces``, ``setup``):
    provision waits for its workloads too, and close deletes it and waits until it is gone, so the
    next episode can make it again."""
    import copy

    from itbench_agents.harness.app_data import AppData
    from itbench_agents.harness.backend import ProvisionRequest

    monkeypatch.setenv(ENDPOINTS_ENV, "")
    app = next(
        o
        for o in AppData.load("chain").model.manifests
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "c"
    )

    def request(cpu: str, folder: str) -> ProvisionRequest:
        preview = copy.deepcopy(app)
        preview["metadata"] = {"name": "preview", "namespace": "chain-dev"}
        preview["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        dev = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "chain-dev"}}
        return ProvisionRequest(
            app="chain",
            seed=0,
            history_s=0.0,
            folder=tmp_path / folder,
            namespaces=["chain-dev"],
            customize=lambda m: [*m, dev, preview],
        )

    with running_twin(workdir=tmp_path / "c", speed=SPEED) as twin:
        assert twin.endpoints is not None
        twin.endpoints.write(tmp_path / "live.json")
        backend = LiveBackend(tmp_path / "live.json", ready_timeout_s=30.0)
        api = backend.admin_api()
        # a workload of the second namespace that never gets ready (no node fits it) holds the episode back
        with pytest.raises(LiveBackendError, match=r"chain-dev: not ready after 30 s: Deployment/preview"):
            backend.provision(request("1000", "h1"))
        assert backend.namespaces == ["chain", "chain-dev"]
        backend.close()
        assert not api.exists("v1", "Namespace", None, "chain-dev")  # gone, not left terminating
        assert api.exists("apps/v1", "Deployment", "chain", "c")
        # the next episode makes it again, and waits for it
        backend.provision(request("10m", "h1"))
        # something holds it while it is deleted: close says so, the next episode waits, then says why
        hold = {"metadata": {"finalizers": ["example.com/hold"]}}
        api.patch("v1", "Namespace", None, "chain-dev", hold, patch_type="merge")
        backend.close()
        said = "namespace chain-dev: still terminating (finalizers of its own: example.com/hold)"
        assert f"could not restore: {said}" in capsys.readouterr().err
        with pytest.raises(
            LiveBackendError, match=r"namespace chain-dev: still terminating after 30 s, .*hold"
        ):
            backend.provision(request("10m", "h2"))
        backend.close()
        api.patch(
            "v1", "Namespace", None, "chain-dev", {"metadata": {"finalizers": None}}, patch_type="merge"
        )
        backend.provision(request("10m", "h3"))
        ready = api.get("apps/v1", "Deployment", "chain-dev", "preview")["status"].get("readyReplicas")
        assert ready == app["spec"].get("replicas", 1)
        backend.close()
        assert not api.exists("v1", "Namespace", None, "chain-dev")
        assert api.exists("apps/v1", "Deployment", "chain", "c")
