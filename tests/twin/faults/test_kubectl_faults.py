"""Inject and fix faults with the real /usr/bin/kubectl against the twin's Kubernetes API."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from faultkit import Cluster, make_twin
from support.kubectl_cluster import KUBECTL, run_kubectl

pytestmark = pytest.mark.kubectl

NETWORK_CHAOS = """
apiVersion: chaos-mesh.org/v1alpha1
kind: NetworkChaos
metadata: {name: b-to-c, namespace: chain}
spec:
  action: {action}
  mode: all
  selector: {namespaces: [chain], labelSelectors: {app: b}}
  direction: to
  target: {mode: all, selector: {namespaces: [chain], labelSelectors: {app: c}}}
"""


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[tuple[Cluster, Callable[..., subprocess.CompletedProcess[str]]]]:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl not installed")
    tw = make_twin("chain", settle=60.0)
    ep = tw.serve(tmp_path)

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_kubectl(ep.kubeconfig, *args, input=stdin)

    yield Cluster(tw), run
    tw.close()


def test_bad_image_rollout_and_rollout_undo(kube) -> None:  # noqa: ANN001
    c, kubectl = kube
    r = kubectl(
        "patch",
        "deployment",
        "b",
        "--type=merge",
        "-p",
        '{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}',
    )
    assert r.returncode == 0, r.stderr
    r = kubectl("set", "image", "deployment/b", "b=registry.local/chain/b:9.9")
    assert r.returncode == 0, r.stderr
    c.advance(60)
    pods = kubectl("get", "pods", "-l", "app=b").stdout
    assert "ImagePullBackOff" in pods or "ErrImagePull" in pods
    assert c.degraded() == {"a"} and not c.probe_ok()
    r = kubectl("rollout", "undo", "deployment/b")
    assert r.returncode == 0, r.stderr
    c.advance(120)
    assert "Running" in kubectl("get", "pods", "-l", "app=b").stdout
    assert not c.degraded() and c.probe_ok()


def test_chaos_objects_through_kubectl(kube) -> None:  # noqa: ANN001
    c, kubectl = kube
    r = kubectl("apply", "-f", "-", stdin=NETWORK_CHAOS.replace("{action}", "explode"))
    assert r.returncode != 0 and "spec.action" in r.stderr and "Unsupported value" in r.stderr
    r = kubectl("apply", "-f", "-", stdin=NETWORK_CHAOS.replace("{action}", "partition"))
    assert r.returncode == 0, r.stderr
    c.advance(20)
    assert "b-to-c" in kubectl("get", "networkchaos", "-n", "chain").stdout
    assert c.degraded() == {"a", "b"}
    r = kubectl("delete", "networkchaos", "b-to-c", "-n", "chain")
    assert r.returncode == 0, r.stderr
    c.advance(30)
    assert not c.degraded() and c.probe_ok()


def test_unknown_flag_variant_is_rejected_by_the_api(kube) -> None:  # noqa: ANN001
    _, kubectl = kube
    bad = '{"flags": {"adFailure": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "maybe"}}}'
    r = kubectl("create", "configmap", "flagd-config", f"--from-literal=demo.flagd.json={bad}")
    assert r.returncode != 0
    assert "data[demo.flagd.json]" in r.stderr and "'maybe' is not one of its variants" in r.stderr
    good = bad.replace('"maybe"', '"off"')
    r = kubectl("create", "configmap", "flagd-config", f"--from-literal=demo.flagd.json={good}")
    assert r.returncode == 0, r.stderr
