"""A snapshot as an episode's environment (snapshots/environment.py): the agent gets endpoints and a
read-only credential, never the folder; mitigation is not scored; a snapshot of another scenario or
a broken folder is an environment error, named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from snapshot_fixtures import NOW, NS
from test_layout import observed

from itbench_agents.core.task import Limits
from itbench_agents.harness.environment import EnvironmentError_
from itbench_agents.k8s.client import KubeApi, KubeApiError
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.scenario.spec import Scenario
from itbench_agents.snapshots.environment import SNAPSHOTS_ENV, SnapshotEnvironment, from_spec
from itbench_agents.snapshots.layout import SnapshotMeta
from itbench_agents.snapshots.record import write_observed

SCENARIO = "sre/cart-failure-flag-v1"
DEV = f"{NS}-dev"


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    sc = ScenarioRegistry.default().get(SCENARIO)
    return sc.model_copy(update={"namespace": NS})


def _snapshot(folder: Path, scenario_id: str = SCENARIO, *, dev: bool = False) -> Path:
    """A snapshot of ``scenario_id``; with ``dev``, of a task whose team has a second namespace
    (:data:`DEV`, with a Service ``preview``)."""
    seen = observed()
    if dev:
        created = "2025-12-31T23:00:00Z"
        seen.objects += [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": DEV, "creationTimestamp": created},
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "preview", "namespace": DEV, "creationTimestamp": created},
                "spec": {"selector": {"app": "preview"}, "ports": [{"port": 80}]},
            },
        ]
    write_observed(folder, seen)
    (folder / "ground_truth.yaml").write_text("groups: []\n")
    meta = SnapshotMeta(
        scenario_id=scenario_id,
        app="shop",
        namespace=NS,
        namespaces=[DEV] if dev else [],
        seed=3,
        recorded_at=NOW,
        window_s=600,
        fault_objects=[f"{NS}/deployment/cart", f"{NS}/replicaset/cart-7d4b9c"],
        replicasets_before=[],
        call_edges=[(NS, "frontend", "cart")],
    )
    (folder / "snapshot.json").write_text(meta.model_dump_json())
    return folder


def test_the_agent_gets_endpoints_and_a_read_only_credential_never_the_folder(
    tmp_path: Path, scenario: Scenario
) -> None:
    folder = _snapshot(tmp_path / "snaps" / "cart")
    env = SnapshotEnvironment(scenario, folder, workdir=tmp_path / "work")
    env.deploy()
    try:
        assert env.inject() == []
        task = env.task(Limits())
        assert task.kind == "diagnosis"
        assert "read-only" in task.goal and "mitigate" not in task.goal
        shown = json.dumps(task.model_dump(mode="json"))
        for f in (tmp_path / "work").iterdir():
            shown += f.read_text()
        assert str(tmp_path / "snaps") not in shown  # no path to the folder (ground_truth.yaml)
        assert str(folder.resolve()) in env.private_paths()  # and a sandboxed agent has it hidden
        agent = KubeApi.from_kubeconfig(None, task.endpoints.kubeconfig)
        assert agent.get("v1", "Pod", NS, "cart-7d4b9c-x2x2x")["status"]["phase"] == "Running"
        with pytest.raises(KubeApiError) as e:
            agent.delete("chaos-mesh.org/v1alpha1", "PodChaos", NS, "kill-cart")
        assert e.value.code == 403
        assert env.now() == NOW
        score = env.evaluate()
        assert not score.applicable and "read-only" in (score.reason or "")
        topo = env.topology()
        assert topo.at_fault == {f"{NS}/deployment/cart", f"{NS}/replicaset/cart-7d4b9c"}
        assert topo.released == {f"{NS}/replicaset/cart-7d4b9c"}
    finally:
        env.teardown()


def test_a_task_with_a_second_namespace_reads_both_and_its_topology_holds_both(
    tmp_path: Path, scenario: Scenario
) -> None:
    """A scenario whose team has another namespace (``namespaces``): the agent may read both, its
    goal names both, and the scorer's topology has the objects of both."""
    folder = _snapshot(tmp_path / "snaps" / "cart", dev=True)
    env = SnapshotEnvironment(
        scenario.model_copy(update={"namespaces": [DEV]}), folder, workdir=tmp_path / "w"
    )
    env.deploy()
    try:
        task = env.task(Limits())
        assert task.namespaces == [NS, DEV]
        assert f"running in namespaces {NS} and {DEV} of this" in task.goal
        agent = KubeApi.from_kubeconfig(None, task.endpoints.kubeconfig)
        assert agent.get("v1", "Service", DEV, "preview")["spec"]["ports"][0]["port"] == 80
        assert f"{DEV}/service/preview" in env.topology().nodes
    finally:
        env.teardown()


def test_masked_sources_are_left_out_of_the_agents_endpoints(tmp_path: Path, scenario: Scenario) -> None:
    env = SnapshotEnvironment(scenario, _snapshot(tmp_path / "s"), workdir=tmp_path / "w", masked=["traces"])
    env.deploy()
    try:
        task = env.task(Limits())
        assert task.endpoints.jaeger_url is None
        assert env.endpoints.jaeger_url  # the harness keeps its own
    finally:
        env.teardown()


def test_a_snapshot_of_another_scenario_or_a_broken_one_is_an_environment_error(
    tmp_path: Path, scenario: Scenario
) -> None:
    other = _snapshot(tmp_path / "other", "sre/ad-failure-flag-v1")
    with pytest.raises(
        EnvironmentError_, match="recorded sre/ad-failure-flag-v1, not sre/cart-failure-flag-v1"
    ):
        SnapshotEnvironment(scenario, other, workdir=tmp_path / "w").deploy()
    broken = _snapshot(tmp_path / "broken")
    (broken / "app.json").write_text("{")
    with pytest.raises(EnvironmentError_, match=r"snapshot: .*app.json: not JSON"):
        SnapshotEnvironment(scenario, broken, workdir=tmp_path / "w").deploy()


def test_the_factory_finds_the_scenarios_snapshot(
    tmp_path: Path, scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Spec:
        masked: list[str] = []

    spec = Spec()
    spec.scenario = scenario  # type: ignore[attr-defined]
    monkeypatch.delenv(SNAPSHOTS_ENV, raising=False)
    with pytest.raises(EnvironmentError_, match="names no snapshot folder"):
        from_spec(spec, tmp_path / "w")
    monkeypatch.setenv(SNAPSHOTS_ENV, str(tmp_path))
    _snapshot(tmp_path / "a", "sre/ad-failure-flag-v1")
    with pytest.raises(EnvironmentError_, match="no snapshot of sre/cart-failure-flag-v1"):
        from_spec(spec, tmp_path / "w")
    _snapshot(tmp_path / "b")
    env = from_spec(spec, tmp_path / "w")
    assert env.folder == tmp_path / "b"
    assert str(tmp_path.resolve()) in env.private_paths()


def test_snapshot_serve_gives_a_read_only_kubeconfig_until_interrupted(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    folder = _snapshot(tmp_path / "s", dev=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "itbench_agents.cli",
            "snapshot",
            "serve",
            str(folder),
            "--workdir",
            str(tmp_path / "w"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "w" / "endpoints.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "snapshot serve did not start"
            time.sleep(0.1)
        time.sleep(0.2)
        from itbench_agents.core.endpoints import Endpoints

        ep = Endpoints.read(tmp_path / "w" / "endpoints.json")
        api = KubeApi.from_kubeconfig(None, ep.kubeconfig)
        assert api.get("v1", "Pod", NS, "cart-7d4b9c-x2x2x")["metadata"]["uid"]
        assert api.get("v1", "Service", DEV, "preview")  # the task's other namespace too
        with pytest.raises(KubeApiError) as e:
            api.delete("v1", "Pod", NS, "cart-7d4b9c-x2x2x")
        assert e.value.code == 403
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"serving {SCENARIO} (seed 3)" in err


def test_snapshot_commands_refuse_bad_input_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from itbench_agents.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["snapshot", "record", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "choose scenarios with --suite or --scenario" in r.output
    r = runner.invoke(app, ["snapshot", "record", "-s", "sre/nope-v1", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "sre/nope-v1" in r.output
    r = runner.invoke(app, ["snapshot", "record", "--suite", "ciso", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "only the twin's SRE scenario files can be recorded" in r.output
    r = runner.invoke(app, ["snapshot", "record", "-s", SCENARIO, "--churn", "lots", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--churn 'lots'" in r.output
    r = runner.invoke(app, ["snapshot", "serve", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "not a folder" in r.output
    broken = _snapshot(tmp_path / "broken")
    (broken / "k8s_objects.tsv").write_text("timestamp\tbody\n2026-01-01 00:00:00\t{}\n")
    r = runner.invoke(app, ["snapshot", "serve", str(broken)])
    assert r.exit_code == 2 and "k8s_objects.tsv:2: the body is not a Kubernetes object" in r.output
    assert not list(tmp_path.glob("*.partial"))
