"""State written around the admission checks (straight into the store) never crashes the model:
nonsense is ignored the way the real component would ignore it, and noted."""

from __future__ import annotations

from faultkit import CONFIGMAPS, Cluster

from itbench_agents.twin.faults.chaos import CHAOS_GRS


def test_nonsense_chaos_in_the_store_is_not_injected(chain: Cluster) -> None:
    with chain.twin.lock:
        chain.twin.store.create(
            CHAOS_GRS["NetworkChaos"],
            {
                "apiVersion": "chaos-mesh.org/v1alpha1",
                "kind": "NetworkChaos",
                "metadata": {"name": "weird", "namespace": "chain"},
                "spec": {
                    "action": "delay",
                    "mode": "all",
                    "selector": {"labelSelectors": {"app": "c"}},
                    "delay": {"latency": "soon"},
                },
            },
        )
    chain.advance(30)
    assert not chain.degraded() and chain.probe_ok()


def test_malformed_quantities_do_not_crash_the_runtime(chain: Cluster) -> None:
    pod = chain.pods("c")[0]
    ct = {**pod["spec"]["containers"][0], "resources": {"limits": {"cpu": "lots", "memory": "heaps"}}}
    v = chain.twin.runtime.verdict(pod, ct, init=False, node=None, now=chain.twin.now())
    assert v.pull_error is None and v.exit_after_s is None
    u = chain.twin.runtime.usage(pod, ct, chain.twin.now())
    assert u.cpu_cores > 0 and u.memory_bytes > 0


def test_broken_flag_file_written_around_the_check_serves_defaults(otel: Cluster) -> None:
    original = otel.get(CONFIGMAPS, "flagd-config")["data"]["demo.flagd.json"]
    with otel.twin.lock:
        obj = dict(otel.get(CONFIGMAPS, "flagd-config"))
        obj["data"] = {"demo.flagd.json": "{not json"}
        otel.twin.store.update(CONFIGMAPS, obj)
    otel.restart_pods("flagd")
    otel.advance(60)
    assert not otel.degraded() and otel.probe_ok()
    assert any("cannot parse flagd-config" in x for x in otel.twin.behaviour.ignored)
    otel.edit(CONFIGMAPS, "flagd-config", lambda cm: cm.__setitem__("data", {"demo.flagd.json": original}))
    otel.restart_pods("flagd")
    otel.advance(60)
