"""The past of every object, reconstructed from the store's change log.

:class:`History` indexes ``store.log`` incrementally (only new events are read on each refresh):
for every object key it keeps the versions and the times they took effect, so "the Deployment as
it was at t" is one bisection. :func:`container_instances` turns a pod's versions into the
history of each container's *instances* (one per start: restart count, start, end, exit reason),
which cAdvisor series, restart counters and container logs all follow.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...k8s.kinds import GroupResource
from ...k8s.times import parse_rfc3339
from ..kube.store import ObjectStore

Obj = dict[str, Any]
ObjKey = tuple[GroupResource, str, str]

PODS = GroupResource("", "pods")


@dataclass
class ObjRecord:
    """Every version of one object (``None`` = deleted at that time)."""

    gr: GroupResource
    namespace: str
    name: str
    times: list[float] = field(default_factory=list)
    objs: list[Obj | None] = field(default_factory=list)
    _np_times: np.ndarray | None = field(default=None, repr=False)

    def times_array(self) -> np.ndarray:
        if self._np_times is None or len(self._np_times) != len(self.times):
            self._np_times = np.asarray(self.times, dtype=np.float64)
        return self._np_times

    def at(self, t: float) -> Obj | None:
        """The object as it was at ``t`` (``None`` before creation or after deletion)."""
        i = int(np.searchsorted(self.times_array(), t, side="right")) - 1
        return self.objs[i] if i >= 0 else None

    @property
    def latest(self) -> Obj | None:
        """The last version that existed (``None`` if the object never did)."""
        return next((o for o in reversed(self.objs) if o is not None), None)

    @property
    def first(self) -> float:
        return self.times[0]

    @property
    def last(self) -> float:
        """When the object was deleted (inf while it exists)."""
        return self.times[-1] if self.objs[-1] is None else math.inf

    def alive_intervals(self) -> list[tuple[float, float]]:
        out: list[tuple[float, float]] = []
        start: float | None = None
        for t, o in zip(self.times, self.objs, strict=True):
            if o is not None and start is None:
                start = t
            elif o is None and start is not None:
                out.append((start, t))
                start = None
        if start is not None:
            out.append((start, math.inf))
        return out


class History:
    """Incremental index of ``store.log`` by object."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._pos = 0
        self.records: dict[ObjKey, ObjRecord] = {}
        self._by_gr: dict[GroupResource, list[ObjKey]] = {}
        self._lock = threading.Lock()

    @property
    def token(self) -> int:
        return len(self.store.log)

    def refresh(self) -> None:
        """Index events appended since the last refresh (safe from concurrent query threads)."""
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        log = self.store.log
        n = len(log)
        for ev in log[self._pos : n]:
            key = (ev.gr, ev.namespace, ev.name)
            rec = self.records.get(key)
            if rec is None:
                rec = self.records[key] = ObjRecord(ev.gr, ev.namespace, ev.name)
                self._by_gr.setdefault(ev.gr, []).append(key)
            rec.times.append(ev.time)
            rec.objs.append(None if ev.type == "DELETED" else ev.obj)
        self._pos = n

    def of(self, gr: GroupResource) -> Iterator[ObjRecord]:
        self.refresh()
        for key in self._by_gr.get(gr, []):
            yield self.records[key]

    def get(self, gr: GroupResource, namespace: str, name: str) -> ObjRecord | None:
        self.refresh()
        return self.records.get((gr, namespace, name))


# --------------------------------------------------------------------------- container instances
@dataclass
class Instance:
    """One run of one container (what ``kubectl logs`` / ``--previous`` address)."""

    container: str
    init: bool
    restart: int  # restartCount while this instance ran (0 = first run)
    start: float
    end: float = math.inf
    reason: str = ""  # terminated reason: Error, OOMKilled, Completed... ('' while running / killed)
    exit_code: int | None = None
    image: str = ""
    message: str = ""  # terminated message (e.g. the runtime's exit message)


def _ts(s: Any, default: float) -> float:
    if not s:
        return default
    try:
        return parse_rfc3339(str(s))
    except ValueError:
        return default


def container_instances(rec: ObjRecord) -> dict[str, list[Instance]]:
    """Per container name, its instances in start order, derived from the pod's status history."""
    open_: dict[tuple[str, str], Instance] = {}
    done: dict[str, list[Instance]] = {}
    seen: set[tuple[str, str]] = set()

    def close(
        key: tuple[str, str], end: float, reason: str = "", code: int | None = None, message: str = ""
    ) -> None:
        inst = open_.pop(key, None)
        if inst is None:
            return
        inst.end = max(end, inst.start)
        inst.reason = reason or inst.reason
        inst.exit_code = code if code is not None else inst.exit_code
        inst.message = message or inst.message
        done.setdefault(inst.container, []).append(inst)

    def terminated(name: str, init: bool, term: Obj, restart: int, image: str, t: float) -> None:
        started = str(term.get("startedAt") or "")
        key = (name, started)
        end = _ts(term.get("finishedAt"), t)
        reason = str(term.get("reason") or "")
        code = term.get("exitCode")
        message = str(term.get("message") or "")
        if key in open_:
            close(key, end, reason, code, message)
        elif key not in seen and started:
            seen.add(key)
            inst = Instance(name, init, restart, _ts(started, t), end, reason, code, image, message)
            done.setdefault(name, []).append(inst)
        else:  # already closed from an earlier version: enrich the reason
            for inst in done.get(name, []):
                if inst.start == _ts(started, t) and not inst.reason:
                    inst.reason, inst.exit_code, inst.message = reason, code, message

    for t, pod in zip(rec.times, rec.objs, strict=True):
        if pod is None:
            for key in list(open_):
                close(key, t)
            continue
        status = pod.get("status") or {}
        running_now: set[tuple[str, str]] = set()
        for init, field_name in ((True, "initContainerStatuses"), (False, "containerStatuses")):
            for cs in status.get(field_name) or []:
                name = str(cs.get("name", ""))
                restart = int(cs.get("restartCount") or 0)
                image = str(cs.get("image") or "")
                state = cs.get("state") or {}
                last = (cs.get("lastState") or {}).get("terminated")
                if last:
                    terminated(name, init, last, max(restart - 1, 0), image, t)
                if "running" in state:
                    started = str((state["running"] or {}).get("startedAt") or "")
                    key = (name, started)
                    running_now.add(key)
                    if key not in open_ and key not in seen:
                        seen.add(key)
                        open_[key] = Instance(name, init, restart, _ts(started, t), image=image)
                elif "terminated" in state:
                    terminated(name, init, state["terminated"], restart, image, t)
        for key in list(open_):
            if key not in running_now:
                close(key, t)
    out: dict[str, list[Instance]] = {}
    for inst in [*done_values(done), *open_.values()]:
        out.setdefault(inst.container, []).append(inst)
    for lst in out.values():
        lst.sort(key=lambda i: (i.start, i.restart))
    return out


def done_values(done: dict[str, list[Instance]]) -> list[Instance]:
    return [i for lst in done.values() for i in lst]
