"""The behaviour model's traced verdicts: the kubelet asks again only for containers whose inputs
changed, and the cluster ends up exactly as when every container is asked on every change."""

from __future__ import annotations

import json
from typing import Any

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.app.behaviour import BehaviourModel
from itbench_agents.twin.app.loader import load_app
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.runtime import ContainerVerdict, ResourceUsage, TracedRuntime

Obj = dict[str, Any]
CONFIGMAPS = GroupResource("", "configmaps")
DEPLOYMENTS = GroupResource("apps", "deployments")


class Counting:
    """The behaviour model behind a plain ``ContainerRuntime`` (untraced: asked for every running
    container on every change), or traced, counting the verdicts asked either way."""

    def __init__(self, model: BehaviourModel) -> None:
        self.model = model
        self.calls = 0

    def verdict(
        self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float
    ) -> ContainerVerdict:
        self.calls += 1
        return self.model.verdict(pod, container, init=init, node=node, now=now)

    def usage(self, pod: Obj, container: Obj, now: float) -> ResourceUsage:
        return self.model.usage(pod, container, now)


class CountingTraced(Counting):
    def traced_verdict(self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float) -> Any:
        self.calls += 1
        return self.model.traced_verdict(pod, container, init=init, node=node, now=now)

    def still_current(self, reads: Any, now: float) -> bool:
        return self.model.still_current(reads, now)

    def derived_generation(self, now: float) -> int:
        return self.model.derived_generation(now)


def _run(app: str, runtime_cls: type[Counting]) -> tuple[list[tuple[Any, ...]], int]:
    twin = Twin(seed=3, clock=ManualClock())
    twin.app = load_app(app)
    twin.behaviour = BehaviourModel(twin, twin.app)
    runtime = runtime_cls(twin.behaviour)
    twin.runtime = runtime
    twin.install_observability()
    twin.apply(twin.app.manifests)
    twin.sync()
    twin.advance(120)
    # a fault and its fix: a flag file edit (flagd restarts to read it) or a wrong image
    ns = twin.app.namespace
    dep = next(d for d in twin.store.list(DEPLOYMENTS, ns) if d["spec"]["template"]["spec"].get("containers"))
    good = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    for image in (good + "-nonexistent", good):
        new = json.loads(json.dumps(twin.store.get(DEPLOYMENTS, ns, dep["metadata"]["name"])))
        new["spec"]["template"]["spec"]["containers"][0]["image"] = image
        new["metadata"].pop("resourceVersion", None)
        twin.store.update(DEPLOYMENTS, new)
        twin.advance(120)
    log = [(e.rv, e.type, str(e.gr), json.dumps(e.obj, sort_keys=True)) for e in twin.store.log]
    twin.close()
    return log, runtime.calls


@pytest.mark.parametrize("app", ["otel-demo", "hotel-reservation"])
def test_traced_refresh_gives_the_same_cluster_with_fewer_verdicts(
    app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ITBENCH_TWIN_VERIFY_VERDICTS", "0")  # count only the verdicts really asked
    assert isinstance(CountingTraced(None), TracedRuntime) and not isinstance(Counting(None), TracedRuntime)  # type: ignore[arg-type]
    full_log, full_calls = _run(app, Counting)
    traced_log, traced_calls = _run(app, CountingTraced)
    assert len(traced_log) == len(full_log) > 500
    assert traced_log == full_log
    assert traced_calls < full_calls / 2, (traced_calls, full_calls)
