from __future__ import annotations

import pytest

from itbench_agents.tools.kubectl_policy import check

NS = ["shop"]


@pytest.mark.parametrize(
    "argv",
    [
        ["get", "pods", "-n", "shop"],
        ["-n", "shop", "describe", "deploy", "cart"],
        ["logs", "deploy/cart", "--tail=20", "-n", "shop"],
        ["rollout", "history", "deployment/cart", "-n", "shop"],
        ["get", "pods", "-A"],
        ["top", "pods", "--namespace=shop"],
        ["get", "events", "-nshop"],
        ["config", "view"],
    ],
)
def test_read_commands_allowed_during_diagnosis(argv: list[str]) -> None:
    d = check(argv, phase="diagnosis", namespaces=NS)
    assert d.allowed, d.reason
    assert not d.mutating


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["exec", "-it", "cart-1", "--", "sh"], "exec"),
        (["port-forward", "svc/cart", "8080"], "tunnel"),
        (["proxy"], "proxy"),
        (["edit", "deploy/cart"], "interactive editor"),
        (["cp", "cart-1:/etc/passwd", "."], "copies"),
        (["attach", "cart-1"], "attaches"),
        (["run", "-i", "x", "--image=busybox"], "interactive"),
        (["get", "pods", "--kubeconfig=/tmp/other"], "--kubeconfig"),
        (["get", "pods", "--context", "prod"], "--context"),
        (["get", "pods", "-n", "kube-system"], "outside"),
        (["frobnicate"], "unknown"),
        (["logs", "-f", "cart-1"], "streams forever"),
        (["get", "pods", "-w"], "streams forever"),
        ([], "empty"),
    ],
)
def test_refusals_explain_themselves(argv: list[str], needle: str) -> None:
    d = check(argv, phase="mitigation", namespaces=NS)
    assert not d.allowed
    assert needle in d.reason


@pytest.mark.parametrize(
    "argv",
    [
        ["scale", "deploy/cart", "--replicas=2"],
        ["rollout", "undo", "deployment/cart"],
        ["patch", "svc", "cart", "-p", "{}"],
        ["delete", "pod", "cart-1"],
        ["apply", "-f", "-"],
    ],
)
def test_mutations_refused_during_diagnosis_allowed_in_mitigation(argv: list[str]) -> None:
    d = check(argv, phase="diagnosis", namespaces=NS)
    assert not d.allowed and "diagnosis" in d.reason
    d = check(argv, phase="mitigation", namespaces=NS)
    assert d.allowed and d.mutating
    assert d.argv[-2:] == ["-n", "shop"]  # the task's namespace is filled in


@pytest.mark.parametrize(
    "argv", [["delete", "namespace", "shop"], ["delete", "ns/shop"], ["delete", "nodes", "node-1"]]
)
def test_deleting_namespaces_or_nodes_is_refused(argv: list[str]) -> None:
    d = check(argv, phase="mitigation", namespaces=NS)
    assert not d.allowed and "refused" in d.reason


def test_mutating_all_namespaces_refused() -> None:
    assert not check(["delete", "pods", "--all", "-A"], phase="mitigation", namespaces=NS).allowed


def test_dry_run_is_read_only() -> None:
    d = check(["scale", "deploy/cart", "--replicas=2", "--dry-run=server"], phase="diagnosis", namespaces=NS)
    assert d.allowed and not d.mutating


def test_files_only_from_workdir(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "fix.yaml").write_text("kind: x")
    ok = check(["apply", "-f", "fix.yaml"], phase="mitigation", namespaces=NS, workdir=str(tmp_path))
    assert ok.allowed
    bad = check(
        ["apply", "-f", "/etc/ground_truth.yaml"], phase="mitigation", namespaces=NS, workdir=str(tmp_path)
    )
    assert not bad.allowed
    assert not check(["apply", "-f", "http://x/y.yaml"], phase="mitigation", namespaces=NS).allowed
