"""The twin's object store: what etcd is to a real API server.

Objects are plain JSON-shaped dicts keyed by (group, resource, namespace, name). The store owns
``metadata.uid``, ``resourceVersion``, ``generation`` and ``creationTimestamp``; it keeps a
complete, timestamped change log that serves watches *and* is the twin's timeline of state
(telemetry reconstructs the past from it).

Rules for callers:

- Objects returned by the store are shared and **read-only**; use :func:`clone` before changing one.
- Every mutation happens under :attr:`ObjectStore.lock` (an ``RLock`` shared with the whole twin).
- Mutations notify synchronous listeners (controllers) after the change is recorded.
"""

from __future__ import annotations

import bisect
import builtins
import json
import random
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ...k8s.kinds import GroupResource
from ...k8s.times import rfc3339
from .errors import already_exists, conflict, invalid, not_found

Obj = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True)
class ChangeEvent:
    """One entry of the change log (and one watch event)."""

    rv: int
    type: EventType
    gr: GroupResource
    obj: Obj
    time: float

    @property
    def namespace(self) -> str:
        return str(self.obj.get("metadata", {}).get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.obj.get("metadata", {}).get("name", ""))


_PLAIN = frozenset({str, int, float, bool, type(None)})


class _NotPlain(Exception):
    """A value ``_copy`` leaves to JSON: a key that is not a string, a type that is not JSON's."""


def clone(obj: Obj) -> Obj:
    """A deep copy of a JSON-shaped object, exactly what a JSON round trip gives (tuples become
    lists; a non-string key or a non-JSON type takes the round trip itself), about three times
    faster than the round trip (every store write and read copies)."""
    try:
        return _copy(obj)  # type: ignore[no-any-return]
    except (_NotPlain, RecursionError):
        return json.loads(json.dumps(obj))  # type: ignore[no-any-return]


def _copy(o: Any) -> Any:
    t = type(o)
    if t is dict:
        out = {}
        for k, v in o.items():
            if type(k) is not str:
                raise _NotPlain
            out[k] = v if type(v) in _PLAIN else _copy(v)
        return out
    if t is list or t is tuple:
        return [v if type(v) in _PLAIN else _copy(v) for v in o]
    if t in _PLAIN:
        return o
    raise _NotPlain


_NAME_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of k8s' utilrand.String


class ObjectStore:
    """In-memory, versioned object storage with a change log and listeners."""

    def __init__(self, now: Callable[[], float], seed: int = 0, lock: threading.RLock | None = None) -> None:
        self._now = now
        self._rng = random.Random(seed)
        self.lock = lock or threading.RLock()
        self.changed = threading.Condition(self.lock)
        self._objects: dict[GroupResource, dict[tuple[str, str], Obj]] = {}
        self._rv = 0
        self.log: builtins.list[ChangeEvent] = []
        self._listeners: builtins.list[Callable[[ChangeEvent], None]] = []

    # ------------------------------------------------------------------ identity helpers
    @property
    def resource_version(self) -> int:
        return self._rv

    def new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def random_suffix(self, n: int = 5) -> str:
        return "".join(self._rng.choice(_NAME_SUFFIX) for _ in range(n))

    def subscribe(self, listener: Callable[[ChangeEvent], None]) -> None:
        """``listener(event)`` runs synchronously after each change, under the lock."""
        self._listeners.append(listener)

    # ------------------------------------------------------------------ reads
    def get(self, gr: GroupResource, namespace: str, name: str) -> Obj | None:
        return self._objects.get(gr, {}).get((namespace, name))

    def must_get(self, gr: GroupResource, namespace: str, name: str) -> Obj:
        obj = self.get(gr, namespace, name)
        if obj is None:
            raise not_found(gr.group, gr.resource, name)
        return obj

    def list(self, gr: GroupResource, namespace: str | None = None) -> builtins.list[Obj]:
        """All objects of a type (optionally in one namespace), sorted by namespace then name."""
        bucket = self._objects.get(gr, {})
        keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
        return [bucket[k] for k in keys]

    def kinds(self) -> builtins.list[GroupResource]:
        return sorted(self._objects)

    # ------------------------------------------------------------------ writes
    def create(self, gr: GroupResource, obj: Obj, *, dry_run: bool = False) -> Obj:
        with self.lock:
            obj = clone(obj)
            meta = obj.setdefault("metadata", {})
            ns = meta.get("namespace", "") or ""
            if not meta.get("name"):
                gen = meta.get("generateName")
                if not gen:
                    raise invalid(
                        obj.get("kind", gr.resource),
                        "",
                        [
                            (
                                "metadata.name",
                                "FieldValueRequired",
                                "Required value: name or generateName is required",
                            )
                        ],
                        gr.group,
                    )
                meta["name"] = gen + self.random_suffix()
            name = meta["name"]
            bucket = self._objects.setdefault(gr, {})
            if (ns, name) in bucket:
                raise already_exists(gr.group, gr.resource, name)
            meta["uid"] = self.new_uid()
            meta["creationTimestamp"] = rfc3339(self._now())
            meta.setdefault("generation", 1)
            meta.pop("resourceVersion", None)
            meta.pop("deletionTimestamp", None)
            if dry_run:
                meta["resourceVersion"] = str(self._rv)
                return obj
            return self._commit(gr, "ADDED", obj)

    def restore(self, gr: GroupResource, obj: Obj) -> Obj:
        """Put back an object as it was recorded (a snapshot): its uid, creationTimestamp,
        generation and status are kept; only its resourceVersion is this store's. Raises 409 for
        an object already there."""
        with self.lock:
            obj = clone(obj)
            meta = obj.setdefault("metadata", {})
            key = (meta.get("namespace", "") or "", meta.get("name", ""))
            if not key[1]:
                raise invalid(
                    obj.get("kind", gr.resource),
                    "",
                    [("metadata.name", "FieldValueRequired", "Required value: name is required")],
                    gr.group,
                )
            if key in self._objects.get(gr, {}):
                raise already_exists(gr.group, gr.resource, key[1])
            meta.setdefault("uid", self.new_uid())
            meta.setdefault("creationTimestamp", rfc3339(self._now()))
            return self._commit(gr, "ADDED", obj)

    def update(
        self,
        gr: GroupResource,
        obj: Obj,
        *,
        dry_run: bool = False,
        status_only: bool = False,
        owned: bool = False,
    ) -> Obj:
        """Replace an object. A ``resourceVersion`` in ``obj`` must match (else 409 Conflict).

        ``generation`` grows when anything outside ``metadata`` and ``status`` changes.
        With ``status_only`` only ``.status`` is taken from ``obj`` (the /status subresource).
        With ``owned``, ``obj`` is a fresh copy the caller hands over and never touches again: the
        store keeps it as it is rather than copying it first.
        """
        with self.lock:
            obj = obj if owned else clone(obj)
            meta = obj.setdefault("metadata", {})
            ns, name = meta.get("namespace", "") or "", meta.get("name", "")
            old = self.must_get(gr, ns, name)
            rv = meta.get("resourceVersion")
            if rv and str(rv) != old["metadata"]["resourceVersion"]:
                raise conflict(gr.group, gr.resource, name)
            if status_only:
                new = clone(old)
                if "status" in obj:
                    new["status"] = obj["status"]
                obj = new
                meta = obj["metadata"]
            else:
                # the server owns these
                for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
                    if k in old["metadata"]:
                        meta[k] = old["metadata"][k]
                    else:
                        meta.pop(k, None)
                gen = old["metadata"].get("generation", 1)
                if _spec_part(obj) != _spec_part(old):
                    gen += 1
                meta["generation"] = gen
            if obj == old:
                return old
            if dry_run:
                return obj
            result = self._commit(gr, "MODIFIED", obj)
            if (
                meta.get("deletionTimestamp")
                and not meta.get("finalizers")
                and old["metadata"].get("finalizers")
            ):
                # the last finalizer is gone (an object marked by mark_deleted() waits for delete())
                return self._remove(gr, ns, name)
            return result

    def delete(self, gr: GroupResource, namespace: str, name: str, *, dry_run: bool = False) -> Obj:
        """Delete an object; one with finalizers only gets a ``deletionTimestamp``."""
        with self.lock:
            old = self.must_get(gr, namespace, name)
            if dry_run:
                return old
            if old["metadata"].get("finalizers"):
                if old["metadata"].get("deletionTimestamp"):
                    return old
                new = clone(old)
                new["metadata"]["deletionTimestamp"] = rfc3339(self._now())
                return self._commit(gr, "MODIFIED", new)
            return self._remove(gr, namespace, name)

    def mark_deleted(
        self, gr: GroupResource, namespace: str, name: str, grace_seconds: int = 0, status: Obj | None = None
    ) -> Obj:
        """Graceful deletion: set ``deletionTimestamp`` (now + grace) and
        ``deletionGracePeriodSeconds`` but keep the object, finalizers or not, until a later
        :meth:`delete` removes it. That is what the API server does for a pod (the kubelet stops
        its containers, then confirms) and a namespace (emptied by its controller first).
        Marking again can only shorten the grace period. ``status`` entries are merged into
        ``.status`` in the same change (a namespace's ``phase: Terminating``)."""
        with self.lock:
            old = self.must_get(gr, namespace, name)
            meta = old["metadata"]
            grace = max(0, int(grace_seconds))
            current = meta.get("deletionGracePeriodSeconds")
            if meta.get("deletionTimestamp") and (current is None or current <= grace):
                return old
            new = clone(old)
            new["metadata"]["deletionTimestamp"] = rfc3339(self._now() + grace)
            new["metadata"]["deletionGracePeriodSeconds"] = grace
            if status:
                new.setdefault("status", {}).update(status)
            return self._commit(gr, "MODIFIED", new)

    # ------------------------------------------------------------------ change log
    def events_since(
        self, rv: int, gr: GroupResource | None = None, namespace: str | None = None
    ) -> Iterator[ChangeEvent]:
        """Change events with resourceVersion > ``rv`` (optionally of one type / namespace)."""
        # the log is ordered by rv; bisect to the start
        lo = bisect.bisect_right(self.log, rv, key=lambda e: e.rv)
        for ev in self.log[lo:]:
            if gr is not None and ev.gr != gr:
                continue
            if namespace is not None and ev.namespace != namespace:
                continue
            yield ev

    # ------------------------------------------------------------------ internals
    def _commit(self, gr: GroupResource, etype: EventType, obj: Obj) -> Obj:
        self._rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self._rv)
        key = (meta.get("namespace", "") or "", meta["name"])
        self._objects.setdefault(gr, {})[key] = obj
        self._emit(ChangeEvent(self._rv, etype, gr, obj, self._now()))
        return obj

    def _remove(self, gr: GroupResource, namespace: str, name: str) -> Obj:
        old = self._objects[gr].pop((namespace, name))
        self._rv += 1
        gone = clone(old)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._emit(ChangeEvent(self._rv, "DELETED", gr, gone, self._now()))
        return gone

    def _emit(self, ev: ChangeEvent) -> None:
        self.log.append(ev)
        for listener in list(self._listeners):
            listener(ev)
        self.changed.notify_all()


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}
