"""The realistic test: the upstream OpenTelemetry demo manifest applies with the real
``kubectl apply -f`` and every workload becomes Running/Ready."""

from __future__ import annotations

import pytest
from kube_helpers import SHARED, Cluster, needs_kubectl

MANIFEST = SHARED / "upstream" / "otel-demo" / "kubernetes" / "opentelemetry-demo.yaml"

pytestmark = [
    needs_kubectl,
    pytest.mark.kubectl,
    pytest.mark.skipif(not MANIFEST.exists(), reason=f"upstream OTel demo manifest not found at {MANIFEST}"),
]


@pytest.mark.slow
def test_otel_demo_applies_and_every_workload_is_ready(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "otel-demo", check=False)
    if cluster.kubectl("get", "ns", "otel-demo", check=False).returncode != 0:
        cluster.kubectl(
            "apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: otel-demo}\n"
        )
    out = cluster.kubectl("apply", "-n", "otel-demo", "-f", str(MANIFEST), timeout=120).stdout
    assert "deployment.apps/frontend created" in out
    cluster.advance(300)
    deps = cluster.kjson("get", "deploy", "-n", "otel-demo")["items"]
    assert len(deps) >= 15
    not_ready = [
        d["metadata"]["name"]
        for d in deps
        if (d.get("status") or {}).get("readyReplicas", 0) != d["spec"].get("replicas", 1)
    ]
    assert not not_ready, f"deployments not ready: {not_ready}"
    for kind in ("statefulsets", "daemonsets"):
        for o in cluster.kjson("get", kind, "-n", "otel-demo")["items"]:
            st = o.get("status") or {}
            want = (
                o["spec"].get("replicas", 1)
                if kind == "statefulsets"
                else st.get("desiredNumberScheduled", 0)
            )
            got = st.get("readyReplicas", 0) if kind == "statefulsets" else st.get("numberReady", 0)
            assert got == want, f"{kind}/{o['metadata']['name']} {got}/{want}"
    pods = cluster.kubectl("get", "pods", "-n", "otel-demo").stdout.splitlines()[1:]
    bad = [
        p
        for p in pods
        if p.split()[2] != "Running" or p.split()[1].split("/")[0] != p.split()[1].split("/")[1]
    ]
    assert not bad, "\n".join(bad)
    # kubectl works across the whole app
    assert "frontend" in cluster.kubectl("get", "svc", "-n", "otel-demo").stdout
    assert len(cluster.kubectl("top", "pods", "-n", "otel-demo").stdout.splitlines()) == len(pods) + 1
    # re-applying changes nothing (the manifest's explicit nulls make kubectl send no-op patches, which
    # must not bump generations or resourceVersions)
    before = {
        d["metadata"]["name"]: d["metadata"]
        for d in cluster.kjson("get", "deploy", "-n", "otel-demo")["items"]
    }
    cluster.kubectl("apply", "-n", "otel-demo", "-f", str(MANIFEST), timeout=120)
    after = {
        d["metadata"]["name"]: d["metadata"]
        for d in cluster.kjson("get", "deploy", "-n", "otel-demo")["items"]
    }
    assert {n: m["generation"] for n, m in after.items()} == {n: m["generation"] for n, m in before.items()}
    assert {n: m["resourceVersion"] for n, m in after.items()} == {
        n: m["resourceVersion"] for n, m in before.items()
    }
