"""Chaos Mesh ``Schedule``: creates a child experiment at each cron tick.

As Chaos Mesh does: the child is ``<schedule>-<suffix>`` in the Schedule's namespace, labelled
``managed-by: <schedule>`` and owned by the Schedule; with ``concurrencyPolicy: Forbid`` no new
child starts while one is still running; finished children beyond ``historyLimit`` are deleted.
Pausing the Schedule (annotation ``experiment.chaos-mesh.org/pause: "true"``) pauses its children
and stops new ones; deleting it deletes them. Deleting only the running child is no fix: the next
tick creates another. Each tick records a ``Spawned`` Event on the Schedule (or a Warning ``Forbid``
while a child still runs) and ``status.active`` / ``status.time`` name the newest child and tick. Supported cron minute fields: ``*``, ``*/N``, a number, a list of numbers;
``@every <duration>`` too (other fields are ignored).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...k8s.times import rfc3339
from ..controllers.index import owner_ref
from ..kube.store import clone
from .chaos import CHAOS_GRS, PAUSE_ANNOTATION, is_paused, parse_duration
from .chaosmesh import schedule_forbid, schedule_spawned

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

Obj = dict[str, Any]
SCHEDULES = CHAOS_GRS["Schedule"]
MANAGED_BY = "managed-by"


def next_tick(expr: str, after: float) -> float:
    """The first tick strictly after ``after`` (Unix seconds) for a cron/``@every`` expression."""
    expr = expr.strip()
    if expr.startswith("@every"):
        period = parse_duration(expr.split(None, 1)[1]) or 60.0
        return (math.floor(after / period) + 1) * period
    minute_field = expr.split()[0] if expr.split() else "*"
    minute = math.floor(after / 60.0) + 1  # next whole minute
    for _ in range(60 * 24):
        m = minute % 60
        if _minute_matches(minute_field, m):
            return minute * 60.0
        minute += 1
    return (math.floor(after / 60.0) + 1) * 60.0


def _minute_matches(field: str, m: int) -> bool:
    for part in field.split(","):
        if part == "*":
            return True
        if part.startswith("*/") and part[2:].isdigit():
            if m % max(1, int(part[2:])) == 0:
                return True
        elif part.isdigit() and int(part) == m:
            return True
    return False


class ScheduleRunner:
    """Keeps the children of every Schedule in the twin up to date (driven by the behaviour model)."""

    def __init__(self, twin: Twin) -> None:
        self.twin = twin

    def changed(self, obj: Obj, deleted: bool) -> None:
        meta = obj.get("metadata", {})
        key = ("chaos-schedule", meta.get("uid"))
        if deleted:
            self.twin.scheduler.cancel(key)
            self._delete_children(meta.get("namespace", ""), meta.get("name", ""))
            return
        paused = is_paused(obj)
        for child in self.children(meta.get("namespace", ""), meta.get("name", "")):
            if is_paused(child) != paused:
                self._set_pause(child, paused)
        if not paused:
            when = next_tick(
                str((obj.get("spec") or {}).get("schedule", "* * * * *")), self.twin.scheduler.now()
            )
            self.twin.scheduler.at(when, lambda: self.tick(meta.get("namespace", ""), meta["name"]), key=key)
        else:
            self.twin.scheduler.cancel(key)

    def children(self, ns: str, name: str) -> list[Obj]:
        spec = (self.twin.store.get(SCHEDULES, ns, name) or {}).get("spec") or {}
        kinds = (
            [str(spec["type"])]
            if spec.get("type") in CHAOS_GRS
            else [k for k in CHAOS_GRS if k != "Schedule"]
        )
        out = []
        for kind in kinds:
            for o in self.twin.store.list(CHAOS_GRS[kind], ns):
                if (o["metadata"].get("labels") or {}).get(MANAGED_BY) == name:
                    out.append(o)
        return sorted(out, key=lambda o: (o["metadata"].get("creationTimestamp", ""), o["metadata"]["name"]))

    def tick(self, ns: str, name: str) -> None:
        sched = self.twin.store.get(SCHEDULES, ns, name)
        if sched is None or is_paused(sched):
            return
        spec = sched.get("spec") or {}
        kind = str(spec.get("type", ""))
        inner = spec.get(kind[:1].lower() + kind[1:])
        now = self.twin.scheduler.now()
        key = ("chaos-schedule", sched["metadata"].get("uid"))
        self.twin.scheduler.at(
            next_tick(str(spec.get("schedule", "* * * * *")), now), lambda: self.tick(ns, name), key=key
        )
        if kind not in CHAOS_GRS or not isinstance(inner, dict):
            return
        kids = self.children(ns, name)
        running = [k for k in kids if not _finished(k)]
        if running and spec.get("concurrencyPolicy", "Forbid") == "Forbid":
            schedule_forbid(self.twin, sched, running[-1]["metadata"]["name"])
            return
        child = {
            "apiVersion": sched.get("apiVersion", "chaos-mesh.org/v1alpha1"),
            "kind": kind,
            "metadata": {
                "name": f"{name}-{self.twin.store.random_suffix()}",
                "namespace": ns,
                "labels": {MANAGED_BY: name},
                "ownerReferences": [
                    owner_ref(sched, sched.get("apiVersion", "chaos-mesh.org/v1alpha1"), "Schedule")
                ],
            },
            "spec": clone(inner),
        }
        created = self.twin.store.create(CHAOS_GRS[kind], child)
        schedule_spawned(self.twin, sched, child["metadata"]["name"])
        limit = int(spec.get("historyLimit", 1) or 1)
        finished = [k for k in self.children(ns, name) if _finished(k)]
        for old in finished[: max(0, len(finished) - limit + 1)]:
            self.twin.store.delete(CHAOS_GRS[kind], ns, old["metadata"]["name"])
        cm = created["metadata"]
        active = {
            "apiVersion": created.get("apiVersion", "chaos-mesh.org/v1alpha1"),
            "kind": kind,
            "name": cm["name"],
            "namespace": ns,
            "uid": cm.get("uid", ""),
            "resourceVersion": cm.get("resourceVersion", ""),
        }
        new = clone(self.twin.store.must_get(SCHEDULES, ns, name))
        new["status"] = {"active": [active], "time": rfc3339(now)}
        self.twin.store.update(SCHEDULES, new, status_only=True)

    def _set_pause(self, child: Obj, paused: bool) -> None:
        new = clone(child)
        ann = new["metadata"].setdefault("annotations", {})
        labels = new["metadata"].setdefault("labels", {})
        if paused:
            ann[PAUSE_ANNOTATION] = "true"
            labels[PAUSE_ANNOTATION] = "true"
        else:
            ann.pop(PAUSE_ANNOTATION, None)
            labels.pop(PAUSE_ANNOTATION, None)
        self.twin.store.update(CHAOS_GRS[child["kind"]], new)

    def _delete_children(self, ns: str, name: str) -> None:
        for kind, gr in CHAOS_GRS.items():
            if kind == "Schedule":
                continue
            for o in self.twin.store.list(gr, ns):
                if (o["metadata"].get("labels") or {}).get(MANAGED_BY) == name:
                    self.twin.store.delete(gr, ns, o["metadata"]["name"])


def _finished(obj: Obj) -> bool:
    conds = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
    return (
        conds.get("AllRecovered") == "True"
        and (obj.get("status") or {}).get("experiment", {}).get("desiredPhase") == "Stop"
    )
