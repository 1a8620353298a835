"""The kubectl tool drives the real /usr/bin/kubectl against the twin's Kubernetes API."""

from __future__ import annotations

import shutil

import pytest

from itbench_agents.tools.registry import get_tool

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl binary not installed"),
]


def test_get_and_refusal_are_observations(ctx) -> None:  # type: ignore[no-untyped-def]
    spec = get_tool("kubectl")
    res = spec.invoke(ctx, {"command": "kubectl get deployments"})
    assert not res.error, res.output
    assert "cart" in res.output and "frontend" in res.output

    res = spec.invoke(ctx, {"command": "scale deploy/cart --replicas=0"})
    assert res.error and "refused" in res.output and "diagnosis" in res.output
    assert ctx.actions == []

    res = spec.invoke(ctx, {"command": "exec -it cart -- sh"})
    assert res.error and "exec" in res.output


def test_mutation_in_mitigation_changes_the_cluster(ctx, env) -> None:  # type: ignore[no-untyped-def]
    from itbench_agents.k8s.kinds import GroupResource

    ctx.phase = "mitigation"
    res = get_tool("kubectl").invoke(ctx, {"command": "scale deployment/cart --replicas=3"})
    assert not res.error, res.output
    assert ctx.actions == ["kubectl scale deployment/cart --replicas=3 -n shop"]
    dep = env.twin.get(GroupResource("apps", "deployments"), "shop", "cart")
    assert dep["spec"]["replicas"] == 3


def test_kubectl_errors_come_back_as_text(ctx) -> None:  # type: ignore[no-untyped-def]
    res = get_tool("kubectl").invoke(ctx, {"command": "get deployment nosuch"})
    assert res.error
    assert "NotFound" in res.output or "not found" in res.output


def test_shell_syntax_and_bad_arguments(ctx) -> None:  # type: ignore[no-untyped-def]
    spec = get_tool("kubectl")
    assert "shell syntax" in spec.invoke(ctx, {"command": "get pods | grep cart"}).output
    res = spec.invoke(ctx, {"cmd": "get pods"})
    assert res.error and "invalid arguments" in res.output


def test_apply_from_stdin(ctx, env) -> None:  # type: ignore[no-untyped-def]
    from itbench_agents.k8s.kinds import GroupResource

    ctx.phase = "mitigation"
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\ndata:\n  a: '1'\n"
    res = get_tool("kubectl").invoke(ctx, {"command": "apply -f -", "stdin": manifest})
    assert not res.error, res.output
    assert env.twin.get(GroupResource("", "configmaps"), "shop", "flags")["data"] == {"a": "1"}
