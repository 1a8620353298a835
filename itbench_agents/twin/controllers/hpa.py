"""HorizontalPodAutoscalers (autoscaling/v2, Resource metrics): every 15 s, utilisation of the
target's ready pods from ``twin.runtime.usage`` against their requests; replicas within
[min, max] with the 10 % tolerance and the 300 s scale-down stabilisation window; conditions
AbleToScale / ScalingActive / ScalingLimited and the controller's events.

A steady HPA is not computed again: once a sync wrote nothing, scaled nothing and its
recommendation came out of the stabilisation windows unchanged (so the windows can no longer move
it), the next syncs only note that recommendation, until the store changes (heartbeats aside:
``Index.significant_rv``) or the runtime's usage may have (``usage_stamp``; a leaking container's
usage moves with time, so then every sync computes). A FinOps week is 40,000 syncs of an HPA held
at its minimum; a steady sync also notes the syncs due after it that nothing else can run before
(``_steady_run``: before the scheduler's next callback, within the running ``run_until``), so its
quiet past takes a timer per 300 s hop, not one every 15 s. With ``ITBENCH_TWIN_VERIFY_VERDICTS=1``
(the tests) every skipped sync is computed anyway and checked, each from its own timer.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ...k8s.quantity import parse_quantity
from ...k8s.readiness import is_ready
from ...k8s.times import rfc3339
from ..kube.store import ChangeEvent
from ..runtime import VERIFY_ENV, StaleCacheError
from .base import Controller, update_object, update_status
from .events import record_event
from .index import is_active
from .kinds import DEPLOYMENTS, HPAS, REPLICASETS, STATEFULSETS

Obj = dict[str, Any]

SYNC_PERIOD_S = 15.0
TOLERANCE = 0.1
DOWNSCALE_WINDOW_S = 300.0
_TARGETS = {"Deployment": DEPLOYMENTS, "StatefulSet": STATEFULSETS, "ReplicaSet": REPLICASETS}


@dataclass(frozen=True)
class _Steady:
    """What a sync that changed nothing found: every sync while ``stamp`` holds finds the same."""

    stamp: Hashable
    uid: str
    desired: int
    """The recommendation (before the replica bounds)."""
    keep: float
    """How long recommendations are kept (the longer stabilisation window)."""


class HorizontalPodAutoscalerController(Controller):
    name = "horizontal-pod-autoscaler"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._recs: dict[str, list[tuple[float, int]]] = {}
        self._steady: dict[tuple[str, str], _Steady] = {}
        self._verify = os.environ.get(VERIFY_ENV, "") == "1"

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        if ev.gr == HPAS:
            key = (meta.get("namespace", ""), meta["name"])
            if ev.type == "DELETED":
                self.twin.scheduler.cancel((self.name, "timer", key))
            elif ev.type == "ADDED":
                self.enqueue(key)

    def _stamp(self) -> Hashable | None:
        """Equal between two moments when nothing a sync reads differs; None: no such promise."""
        usage_stamp = getattr(self.twin.runtime, "usage_stamp", None)
        usage = usage_stamp() if callable(usage_stamp) else None
        # heartbeats (Lease renewals, nodes' heartbeat times) change nothing a sync reads
        return None if usage is None else (self.index.significant_rv, usage)

    def sync(self, key: tuple[str, str]) -> None:
        stamp = self._stamp()
        steady = self._steady.pop(key, None)
        if steady is not None and steady.stamp == stamp:
            if self._verify:
                if self._sync(key) != (steady.uid, steady.desired, steady.keep) or self._stamp() != stamp:
                    raise StaleCacheError(f"HPA {key[0]}/{key[1]} kept as steady is not")
            else:
                now = self.now()
                times = self._steady_run(now)
                self.enqueue_at(times[-1] + SYNC_PERIOD_S, key)
                self._remember(steady.uid, times, steady.desired, steady.keep)
            self._steady[key] = steady
            return
        outcome = self._sync(key)
        if outcome is not None and stamp is not None and self._stamp() == stamp:
            self._steady[key] = _Steady(stamp, *outcome)

    def _steady_run(self, now: float) -> list[float]:
        """The times of this steady sync and of the syncs after it, every :data:`SYNC_PERIOD_S`, that
        nothing else can run before: earlier than the scheduler's next callback (one due at the same
        time runs first: it was scheduled earlier) and within the run it is in (between runs the
        API may write). They all find what this one found, so they are done now, at once: a FinOps
        week of an HPA held at its minimum is 40,000 syncs, ~2,000 timers over its quiet past's hops."""
        sched = self.twin.scheduler
        horizon = sched.horizon()
        nxt = sched.next_time()
        times = [now]
        if horizon is None:
            return times
        t = now + SYNC_PERIOD_S  # by repeated addition, as timer after timer would reach it
        while t <= horizon and (nxt is None or t < nxt):
            times.append(t)
            t += SYNC_PERIOD_S
        return times

    def _remember(self, uid: str, times: list[float], desired: int, keep: float) -> list[tuple[float, int]]:
        """Note a recommendation at each of ``times`` (ascending); forget those older than ``keep``
        at the last (the latest always stays). Pruned once: the earlier prunings would remove
        nothing this one keeps."""
        last = times[-1]
        recs = self._recs[uid]
        recs.extend((t, desired) for t in times if t > last - keep or t == last)
        # recommendations arrive in time order: the ones older than the longest window are a prefix
        old = 0
        while old < len(recs) - 1 and recs[old][0] <= last - keep:
            old += 1
        if old:
            del recs[:old]
        return recs

    def _sync(self, key: tuple[str, str]) -> tuple[str, int, float] | None:
        """One sync; returns (uid, recommendation, window kept) when the stabilisation windows left
        the recommendation as it was and nothing was scaled (steady, if nothing was written either:
        later recommendations alike give the same answer)."""
        ns, name = key
        hpa = self.store.get(HPAS, ns, name)
        if hpa is None:
            return None
        self.enqueue_at(self.now() + SYNC_PERIOD_S, key)
        spec = hpa.get("spec", {})
        ref = spec.get("scaleTargetRef") or {}
        gr = _TARGETS.get(ref.get("kind", ""))
        now = self.now()
        ts = rfc3339(now)
        # a shallow copy: top-level keys are replaced, never mutated (the store copies what it writes)
        status = dict(hpa.get("status") or {})
        conds = {c["type"]: c for c in status.get("conditions") or []}

        def cond(ctype: str, st: str, reason: str, msg: str) -> None:
            prev = conds.get(ctype)
            ltt = prev["lastTransitionTime"] if prev and prev.get("status") == st else ts
            conds[ctype] = {
                "type": ctype,
                "status": st,
                "lastTransitionTime": ltt,
                "reason": reason,
                "message": msg,
            }

        target = self.store.get(gr, ns, ref.get("name", "")) if gr else None
        if target is None:
            kind = ref.get("kind", "")
            if gr is None:
                why = (
                    f'no matches for kind "{kind}" in group "{ref.get("apiVersion", "").rpartition("/")[0]}"'
                )
            else:
                label = f"{gr.resource}.{gr.group}" if gr.group else gr.resource
                why = f'{label} "{ref.get("name", "")}" not found'
            msg = f"the HPA controller was unable to get the target's current scale: {why}"
            cond("AbleToScale", "False", "FailedGetScale", msg)
            record_event(
                self.twin, hpa, "FailedGetScale", msg.split(": ", 1)[1], type="Warning", component=self.name
            )
            self._write(hpa, status, conds)
            return None
        current = int(
            target.get("spec", {}).get("replicas", 1)
            if target.get("spec", {}).get("replicas") is not None
            else 1
        )
        status["currentReplicas"] = int(target.get("status", {}).get("replicas", current) or 0)
        selector = target.get("spec", {}).get("selector")
        pods = [p for p in self.index.pods_matching(ns, selector) if is_active(p)]
        min_r = int(spec.get("minReplicas", 1) or 1)
        max_r = int(spec.get("maxReplicas", 1))
        metrics = spec.get("metrics") or [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        ]
        proposals: list[tuple[int, str]] = []
        current_metrics = []
        error: str | None = None
        for m in metrics:
            if m.get("type") != "Resource":
                continue
            res = (m.get("resource") or {}).get("name", "cpu")
            tgt = (m.get("resource") or {}).get("target") or {}
            ratio, util, avg, err = self._utilisation(pods, res, tgt)
            if err is not None:
                error = error or f"failed to get {res} utilization: {err}"
                continue
            cm: Obj = {"type": "Resource", "resource": {"name": res, "current": {"averageValue": avg}}}
            if util is not None:
                cm["resource"]["current"]["averageUtilization"] = util
            current_metrics.append(cm)
            ready = len([p for p in pods if is_ready(p)]) or current
            desired = current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(ratio * ready)
            label = (
                f"{res} resource utilization (percentage of request)"
                if util is not None
                else f"{res} resource"
            )
            proposals.append((desired, label))
        if current_metrics:
            status["currentMetrics"] = current_metrics
        else:
            status.pop("currentMetrics", None)
        if error is not None and not proposals:
            msg = f"the HPA was unable to compute the replica count: {error}"
            cond(
                "AbleToScale",
                "True",
                "SucceededGetScale",
                "the HPA controller was able to get the target's current scale",
            )
            cond("ScalingActive", "False", "FailedGetResourceMetric", msg)
            record_event(
                self.twin, hpa, "FailedGetResourceMetric", error, type="Warning", component=self.name
            )
            record_event(
                self.twin,
                hpa,
                "FailedComputeMetricsReplicas",
                f"invalid metrics (1 invalid out of {len(metrics)}), first error is: failed to get "
                f"{error.split(' ', 3)[2]} resource metric value: {error}",
                type="Warning",
                component=self.name,
            )
            status["desiredReplicas"] = current
            self._write(hpa, status, conds)
            return None
        if current == 0:
            cond(
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            )
            self._write(hpa, status, conds)
            return None
        desired, why = max(proposals) if proposals else (current, "")
        # like the real controller, a new HPA starts with the current size as its first recommendation
        behavior = spec.get("behavior") or {}
        down_w = (behavior.get("scaleDown") or {}).get("stabilizationWindowSeconds")
        up_w = (behavior.get("scaleUp") or {}).get("stabilizationWindowSeconds")
        down_window = DOWNSCALE_WINDOW_S if down_w is None else float(down_w)
        up_window = 0.0 if up_w is None else float(up_w)
        uid = hpa["metadata"]["uid"]
        self._recs.setdefault(uid, [(now, current)])
        keep = max(down_window, up_window)
        recs = self._remember(uid, [now], desired, keep)
        recommended = desired
        if desired < current:
            desired = max(r for t, r in recs if t > now - down_window or t == now)
        elif desired > current and up_window > 0:
            desired = min(r for t, r in recs if t > now - up_window or t == now)
        limited = desired
        if desired > max_r:
            limited = max_r
            cond(
                "ScalingLimited",
                "True",
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        elif desired < min_r:
            limited = min_r
            cond(
                "ScalingLimited",
                "True",
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        else:
            cond(
                "ScalingLimited",
                "False",
                "DesiredWithinRange",
                "the desired count is within the acceptable range",
            )
        cond(
            "ScalingActive",
            "True",
            "ValidMetricFound",
            f"the HPA was able to successfully calculate a replica count from {why or 'cpu resource utilization (percentage of request)'}",
        )
        status["desiredReplicas"] = limited
        if limited != current:

            def mutate(obj: Obj) -> None:
                obj["spec"]["replicas"] = limited

            update_object(self.twin, gr, target, mutate)  # type: ignore[arg-type]
            direction = "above" if limited > current else "below"
            reason = f"{why} {direction} target" if why else "All metrics below target"
            if limited < current and not why:
                reason = "All metrics below target"
            record_event(
                self.twin,
                hpa,
                "SuccessfulRescale",
                f"New size: {limited}; reason: {reason}",
                component=self.name,
            )
            status["lastScaleTime"] = ts
            cond(
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {limited}",
            )
        else:
            cond("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        self._write(hpa, status, conds)
        return (uid, recommended, keep) if desired == recommended and limited == current else None

    def _utilisation(self, pods: list[Obj], res: str, tgt: Obj) -> tuple[float, int | None, str, str | None]:
        ready = [p for p in pods if is_ready(p)]
        if not ready:
            return 1.0, None, "0", "did not receive metrics for targeted pods (pods might be unready)"
        total_use = 0.0
        total_req = 0.0
        for p in ready:
            for c in p.get("spec", {}).get("containers") or []:
                req = ((c.get("resources") or {}).get("requests") or {}).get(res)
                if req is None and tgt.get("type", "Utilization") == "Utilization":
                    return (
                        1.0,
                        None,
                        "0",
                        f"missing request for {res} in container {c['name']} of Pod {p['metadata']['name']}",
                    )
                total_req += parse_quantity(req)
                u = self.twin.runtime.usage(p, c, self.now())
                total_use += u.cpu_cores if res == "cpu" else u.memory_bytes
        avg_use = total_use / len(ready)
        avg_str = f"{round(avg_use * 1000)}m" if res == "cpu" else str(int(avg_use))
        if tgt.get("type", "Utilization") == "Utilization":
            util = int(round(100 * total_use / total_req)) if total_req else 0
            target = float(tgt.get("averageUtilization", 80))
            return (total_use / total_req * 100) / target, util, avg_str, None
        target_v = parse_quantity(tgt.get("averageValue") or tgt.get("value") or "1")
        return avg_use / target_v if target_v else 1.0, None, avg_str, None

    def _write(self, hpa: Obj, status: Obj, conds: dict[str, Obj]) -> None:
        order = {"AbleToScale": 0, "ScalingActive": 1, "ScalingLimited": 2}
        status["conditions"] = sorted(conds.values(), key=lambda c: order.get(c["type"], 9))
        status.setdefault("desiredReplicas", status.get("currentReplicas", 0))
        update_status(self.twin, HPAS, hpa, status)
