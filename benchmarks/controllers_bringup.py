"""Controller cost: CPU time to bring the OpenTelemetry demo's ~23 workloads to Ready on a bare
twin (default runtime, then with the app's behaviour model as runtime), the cost of one virtual hour
of steady state, and how bring-up grows when every Deployment's replicas double.

    uv run python benchmarks/controllers_bringup.py
"""

from __future__ import annotations

import copy
import statistics
import time
from typing import Any

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.app.loader import load_app
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.instance import Twin

PODS = GroupResource("", "pods")


def _scaled(manifests: list[dict[str, Any]], factor: int) -> list[dict[str, Any]]:
    out = copy.deepcopy(manifests)
    for m in out:
        if m.get("kind") == "Deployment":
            m["spec"]["replicas"] = int(m["spec"].get("replicas", 1)) * factor
    return out


def bring_up(behaviour: bool, factor: int = 1) -> tuple[float, float, int]:
    model = load_app("otel-demo")
    manifests = _scaled(model.manifests, factor)
    t0 = time.process_time()
    twin = Twin(seed=1, clock=ManualClock())
    if behaviour:
        from itbench_agents.twin.app.behaviour import BehaviourModel

        twin.app = model
        twin.behaviour = BehaviourModel(twin, model)
        twin.runtime = twin.behaviour
    twin.apply(manifests)
    twin.advance(120)
    up = time.process_time() - t0
    pods = twin.store.list(PODS)
    ready = sum(
        1 for p in pods if all(c.get("ready") for c in p.get("status", {}).get("containerStatuses") or [])
    )
    t1 = time.process_time()
    twin.advance(3600)
    hour = time.process_time() - t1
    return up, hour, ready


def main() -> None:
    for label, behaviour in (("default runtime", False), ("behaviour model", True)):
        for factor in (1, 2):
            runs = [bring_up(behaviour, factor) for _ in range(5)]
            up = statistics.median(r[0] for r in runs)
            hour = statistics.median(r[1] for r in runs)
            print(
                f"otel-demo x{factor} replicas, {label:16s}: bring-up to Ready {up * 1000:7.1f} ms CPU "
                f"({runs[0][2]} pods ready), 1 h steady state {hour * 1000:6.1f} ms CPU (median of 5)"
            )


if __name__ == "__main__":
    main()
