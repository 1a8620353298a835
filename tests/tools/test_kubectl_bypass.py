"""Every kubectl bypass a hostile agent tried: refused by the tool's argv check (local files,
connection overrides, in every pflag spelling) or by the API server's RBAC (namespace deletion,
cluster-scoped deletes, writes while diagnosing), with real kubectl against a twin episode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from itbench_agents.core.task import Limits, Task
from itbench_agents.harness.twin_env import TwinEnvironment
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.tools.context import ToolContext
from itbench_agents.tools.kubectl import kubectl
from itbench_agents.tools.kubectl_policy import check, parse_args
from itbench_agents.tools.registry import ToolError

NS = ["otel-demo"]


@pytest.mark.parametrize(
    "argv",
    [
        ["get", "pods", "-As", "https://evil.example:6443"],
        ["get", "pods", "-shttps://evil.example:6443"],
        ["get", "pods", "-s", "https://evil.example:6443"],
        ["get", "pods", "--server=https://evil.example:6443"],
        ["-As", "https://evil.example", "get", "pods"],
        ["get", "pods", "--token=abc"],
        ["get", "pods", "--kubeconfig", "/tmp/admin"],
        ["get", "pods", "--context=other"],
    ],
)
def test_every_spelling_of_a_connection_override_is_refused(argv: list[str]) -> None:
    d = check(argv, phase="mitigation", namespaces=NS, workdir="/tmp/work")
    assert not d.allowed and "the environment sets the connection" in d.reason


@pytest.mark.parametrize(
    "argv",
    [
        ["get", "pods", "--profile=cpu", "--profile-output=../../../episodes.jsonl"],
        ["get", "pods", "--profile-output", "/tmp/x.prof"],
        ["apply", "-Rf", "/etc/kubernetes"],
        ["apply", "-R", "-f", "/etc/kubernetes"],
        ["apply", "-k", "/root/overlay"],
        ["get", "pods", "--cache-dir=/root/.kube/cache"],
        ["get", "pods", "-o", "jsonpath-file=/etc/passwd"],
        ["create", "configmap", "x", "--from-file=/etc/shadow"],
        ["create", "configmap", "x", "--from-file=key=/etc/shadow"],
        ["create", "configmap", "x", "--from-env-file", "/proc/self/environ"],
        ["get", "pods", "--log-file=/tmp/k.log"],
        ["apply", "-f", "../escape.yaml"],
    ],
)
def test_local_paths_outside_the_work_folder_are_refused(tmp_path: Path, argv: list[str]) -> None:
    d = check(argv, phase="mitigation", namespaces=NS, workdir=str(tmp_path))
    assert not d.allowed, argv


def test_symlinks_out_of_the_work_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").symlink_to("/etc/passwd")
    d = check(["apply", "-f", "m.yaml"], phase="mitigation", namespaces=NS, workdir=str(tmp_path))
    assert not d.allowed
    (tmp_path / "ok.yaml").write_text("{}")
    assert check(["apply", "-f", "ok.yaml"], phase="mitigation", namespaces=NS, workdir=str(tmp_path)).allowed


def test_pflag_reading() -> None:
    p = parse_args(["-nfoo", "get", "pods", "-Rf", "dir", "--output=json", "--", "-x"])
    assert p.values("--namespace") == ["foo"] and p.values("--filename") == ["dir"]
    assert p.has("--recursive") and p.values("--output") == ["json"] and p.positional[-1] == "-x"
    logs = parse_args(["logs", "-fp", "pod-1"])
    assert logs.has("--follow") and logs.has("--previous") and logs.positional == ["logs", "pod-1"]


@pytest.fixture(scope="module")
def episode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TwinEnvironment, Task]]:
    scenario = ScenarioRegistry.default().get("sre/payment-failure-flag-v1")
    env = TwinEnvironment(scenario, seed=3, workdir=tmp_path_factory.mktemp("work"))
    env.deploy()
    try:
        yield env, env.task(Limits())
    finally:
        env.teardown()


def _ctx(task: Task, phase: str) -> ToolContext:
    ctx = ToolContext.for_task(task)
    ctx.phase = phase  # type: ignore[assignment]
    return ctx


NAMESPACE_MANIFEST = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: otel-demo\n"


def test_rbac_refuses_what_argv_checks_cannot_see(episode: tuple[TwinEnvironment, Task]) -> None:
    _, task = episode
    mit = _ctx(task, "mitigation")
    for command, stdin in (
        ("delete --raw /api/v1/namespaces/otel-demo", None),
        ("delete -f -", NAMESPACE_MANIFEST),
        ("delete --raw /apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical", None),
        (
            "create clusterrolebinding me --clusterrole=cluster-admin --serviceaccount=itbench:agent-writer",
            None,
        ),
        ("delete node twin-worker-1", None),
    ):
        with pytest.raises(ToolError) as err:
            kubectl(mit, command, stdin=stdin)
        assert "forbidden" in str(err.value).lower() or "refused" in str(err.value), command
    diag = _ctx(task, "diagnosis")
    with pytest.raises(ToolError, match="refused during diagnosis"):
        kubectl(diag, "auth reconcile -f -", stdin=NAMESPACE_MANIFEST)
    # the namespace is still there, and the agent can see what it may do
    assert "otel-demo" in kubectl(diag, "get namespace otel-demo")
    rules = kubectl(diag, "auth can-i --list")
    assert "pods" in rules and "[get list watch]" in rules
    assert "agent-reader" in kubectl(diag, "auth whoami")


def test_the_read_only_credential_cannot_write_even_past_the_tool(
    episode: tuple[TwinEnvironment, Task],
) -> None:
    _, task = episode
    import subprocess

    assert task.endpoints.kubeconfig_readonly
    r = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            task.endpoints.kubeconfig_readonly,
            "-n",
            "otel-demo",
            "scale",
            "deploy/ad",
            "--replicas=0",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode != 0 and "forbidden" in r.stderr.lower()
    r = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            task.endpoints.kubeconfig,
            "auth",
            "can-i",
            "delete",
            "namespace/otel-demo",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1 and r.stdout.strip() == "no"
