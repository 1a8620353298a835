"""Helpers for fault tests: twins running an app, and small verbs to inject and inspect.

Faults are injected the way scenarios do it — creating, patching and deleting objects in the
twin's API store — and time is advanced on a manual clock. Nothing here reads twin internals to
decide health: assertions look at ``twin.health`` (the telemetry contract), pods, events and the
functional probe.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.health import ServiceHealth
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.store import clone

Obj = dict[str, Any]
T0 = 1_750_000_000.0
PODS = GroupResource("", "pods")
SERVICES = GroupResource("", "services")
SECRETS = GroupResource("", "secrets")
CONFIGMAPS = GroupResource("", "configmaps")
EVENTS = GroupResource("", "events")
NODES = GroupResource("", "nodes")
DEPLOYMENTS = GroupResource("apps", "deployments")
NETPOLS = GroupResource("networking.k8s.io", "networkpolicies")
QUOTAS = GroupResource("", "resourcequotas")
PVCS = GroupResource("", "persistentvolumeclaims")
HPAS = GroupResource("autoscaling", "horizontalpodautoscalers")
PRIORITY = GroupResource("scheduling.k8s.io", "priorityclasses")
DAEMONSETS = GroupResource("apps", "daemonsets")


def make_twin(app: str, settle: float = 240.0) -> Twin:
    tw = Twin.for_app(app, clock=ManualClock(T0), history_s=0)
    tw.advance(settle)
    return tw


class Cluster:
    """A twin plus the verbs a fault test needs."""

    def __init__(self, twin: Twin) -> None:
        self.twin = twin
        self.ns = twin.app.namespace

    # ------------------------------------------------------------------ reading
    def health(self) -> dict[str, ServiceHealth]:
        snap = self.twin.health.at(self.twin.now())
        assert snap is not None
        return snap.services

    def err(self, service: str, op: str | None = None) -> float:
        """The highest error ratio among a service's operations that receive traffic."""
        ops = [o for o in self.health()[service].operations if op is None or o.operation == op]
        return max((o.error_ratio for o in ops if o.rate > 0 or op is not None), default=0.0)

    def rate(self, service: str, op: str | None = None) -> float:
        return sum(o.rate for o in self.health()[service].operations if op is None or o.operation == op)

    def p50(self, service: str, op: str) -> float:
        return next(o.latency_ms for o in self.health()[service].operations if o.operation == op)

    def symptoms(self, service: str) -> set[str]:
        sh = self.health()[service]
        out = {s.kind for s in sh.symptoms}
        for o in sh.operations:
            out |= {s.kind for s in o.symptoms}
        return out

    def messages(self, service: str) -> str:
        sh = self.health()[service]
        return " | ".join(
            [s.message for s in sh.symptoms] + [s.message for o in sh.operations for s in o.symptoms]
        )

    def degraded(self) -> set[str]:
        """Services with an operation failing more than 1 % of its requests."""
        return {s for s in self.health() if self.err(s) > 0.01}

    def degraded_within(self, seconds: float) -> set[str]:
        """Services degraded at any moment of the last ``seconds`` (flapping faults, crash loops)."""
        now = self.twin.now()
        out: set[str] = set()
        for snap in self.twin.health.between(now - seconds, now):
            for name, sh in snap.services.items():
                if any(o.error_ratio > 0.01 and o.rate > 0 for o in sh.operations):
                    out.add(name)
        return out

    def pods(self, app: str | None = None) -> list[Obj]:
        pods = self.twin.store.list(PODS, self.ns)
        if app is None:
            return pods
        dep = self.get(DEPLOYMENTS, app)
        sel = dep["spec"]["selector"]["matchLabels"] if dep else {"app": app}
        return [p for p in pods if all(p["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())]

    def statuses(self, app: str) -> list[str]:
        """Per pod: the waiting/terminated reason of the first non-running container, else phase/Ready."""
        out = []
        for p in self.pods(app):
            st = p.get("status", {})
            reason = None
            for cs in [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])]:
                state = cs.get("state") or {}
                if "waiting" in state and state["waiting"].get("reason") not in (None, "PodInitializing"):
                    reason = state["waiting"]["reason"]
                    break
                if "terminated" in state and state["terminated"].get("reason") != "Completed":
                    reason = state["terminated"]["reason"]
                    break
            if reason is None:
                ready = any(
                    c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or []
                )
                reason = f"{st.get('phase')}/{'Ready' if ready else 'NotReady'}"
            out.append(reason)
        return sorted(out)

    def events(self, reason: str | None = None) -> list[str]:
        evs = self.twin.store.list(EVENTS, self.ns)
        return [e.get("message", "") for e in evs if reason is None or e.get("reason") == reason]

    def probe_ok(self) -> bool:
        return bool(self.twin.behaviour.probe().ok)

    def get(self, gr: GroupResource, name: str, ns: str | None = None) -> Obj | None:
        return self.twin.store.get(gr, self.ns if ns is None else ns, name)

    # ------------------------------------------------------------------ writing (as a scenario would)
    def create(self, gr: GroupResource, obj: Obj) -> Obj:
        obj = clone(obj)
        if gr not in (PRIORITY, NODES):
            obj.setdefault("metadata", {}).setdefault("namespace", self.ns)
        with self.twin.lock:
            for check in self.twin.validators.get(gr, []):
                causes = check(obj)
                assert not causes, causes
            return self.twin.store.create(gr, obj)

    def edit(self, gr: GroupResource, name: str, fn: Callable[[Obj], None], ns: str | None = None) -> Obj:
        with self.twin.lock:
            obj = clone(self.twin.store.must_get(gr, self.ns if ns is None else ns, name))
            fn(obj)
            return self.twin.store.update(gr, obj)

    def delete(self, gr: GroupResource, name: str, ns: str | None = None) -> None:
        with self.twin.lock:
            self.twin.store.delete(gr, self.ns if ns is None else ns, name)

    def template(self, deploy: str, fn: Callable[[Obj], None]) -> Obj:
        """Patch a Deployment's pod template (a rollout)."""
        return self.edit(DEPLOYMENTS, deploy, lambda d: fn(d["spec"]["template"]["spec"]))

    def container(self, deploy: str, fn: Callable[[Obj], None]) -> Obj:
        return self.template(deploy, lambda spec: fn(spec["containers"][0]))

    def scale(self, deploy: str, n: int) -> Obj:
        return self.edit(DEPLOYMENTS, deploy, lambda d: d["spec"].__setitem__("replicas", n))

    def recreate_strategy(self, deploy: str) -> None:
        """Make rollouts replace the old pod at once (the 'old pod gone' variant of a fault)."""
        self.edit(DEPLOYMENTS, deploy, lambda d: d["spec"].__setitem__("strategy", {"type": "Recreate"}))

    def restart_pods(self, deploy: str) -> None:
        for p in self.pods(deploy):
            self.delete(PODS, p["metadata"]["name"])

    def set_secret(self, name: str, key: str, value: str) -> None:
        def fn(s: Obj) -> None:
            s.setdefault("data", {})[key] = base64.b64encode(value.encode()).decode()
            s.pop("stringData", None)

        self.edit(SECRETS, name, fn)

    def advance(self, seconds: float) -> None:
        self.twin.advance(seconds)


def healed(c: Cluster, seconds: float) -> None:
    """After ``seconds`` more, no service degraded and the functional probe passes."""
    c.advance(seconds)
    assert not c.degraded(), {s: c.messages(s) for s in c.degraded()}
    assert c.probe_ok(), c.twin.behaviour.probe()
