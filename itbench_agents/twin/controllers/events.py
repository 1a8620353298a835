"""The event recorder: core/v1 Events as kubelet, scheduler and controllers write them.

Like client-go's ``EventCorrelator``, a repeat of the same (source, involved object, type, reason,
message) does not create a new Event; it bumps ``count`` and ``lastTimestamp`` of the existing one.
Once 10 different messages with the same (source, object, type, reason) arrive within 10 minutes,
further ones go to one event whose message is ``(combined from similar events): <latest>``. Event names are ``<object name>.<hex>`` as in Kubernetes.
Events expire an hour after their last update (the apiserver's default ``--event-ttl``).
The same objects are served as ``events.k8s.io/v1`` by the REST layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...k8s.times import rfc3339
from ..kube.store import clone
from .kinds import EVENTS, NAMESPACES

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

Obj = dict[str, Any]

EVENT_TTL_S = 3600.0
"""``kube-apiserver --event-ttl`` default: events disappear an hour after their last update."""


@dataclass
class _Recorder:
    """Per-twin recorder state: the aggregation cache and a counter for unique names."""

    cache: dict[tuple[str, ...], tuple[str, str]] = field(default_factory=dict)
    similar: dict[tuple[str, ...], tuple[float, set[str]]] = field(default_factory=dict)
    seq: int = 0


AGGREGATE_MAX_EVENTS = 10
AGGREGATE_WINDOW_S = 600.0


def _recorder(twin: Twin) -> _Recorder:
    rec = getattr(twin, "_event_recorder", None)
    if rec is None:
        rec = _Recorder()
        twin._event_recorder = rec  # type: ignore[attr-defined]
    return rec


def micro_time(t: float) -> str:
    """``metav1.MicroTime``: RFC 3339 with microseconds (``eventTime``, a Lease's ``renewTime``)."""
    us = round(t * 1e6)
    sec, frac = divmod(us, 1_000_000)
    return datetime.fromtimestamp(sec, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:06d}Z"


def _api_version_of(obj: Obj) -> str:
    return str(obj.get("apiVersion") or "v1")


def object_reference(obj: Obj, field_path: str | None = None) -> Obj:
    meta = obj.get("metadata", {})
    ref: Obj = {
        "kind": obj.get("kind", ""),
        "apiVersion": _api_version_of(obj),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    if field_path:
        ref["fieldPath"] = field_path
    return ref


def record_event(
    twin: Twin,
    involved: Obj,
    reason: str,
    message: str,
    type: str = "Normal",
    component: str = "kubelet",
    host: str | None = None,
    field_path: str | None = None,
    action: str | None = None,
) -> Obj | None:
    """Record (or aggregate) an Event about ``involved``. Returns the stored Event, or None when the
    involved object's namespace is gone or terminating (the apiserver refuses those).

    ``action`` records it as components on the ``events.k8s.io/v1`` recorder do (the scheduler:
    ``Binding``, ``Scheduling``, ``Preempting``): ``eventTime`` (microseconds) set, no ``source``,
    ``firstTimestamp``/``lastTimestamp``/``count`` left empty, ``reportingInstance``
    ``<component>-<host>``, and a repeat turns into ``series`` (``count``, ``lastObservedTime``)."""
    if action is not None:
        return _record_series_event(twin, involved, reason, message, type, component, action)
    store = twin.store
    meta = involved.get("metadata", {})
    namespace = meta.get("namespace") or "default"
    if not _accepts_events(store, namespace):
        return None
    now = twin.now()
    ts = rfc3339(now)
    rec = _recorder(twin)
    agg_key = (
        component,
        host or "",
        namespace,
        str(involved.get("kind", "")),
        str(meta.get("name", "")),
        str(meta.get("uid", "")),
        field_path or "",
        type,
        reason,
    )
    key = (*agg_key, message)
    with twin.lock:
        first, messages = rec.similar.get(agg_key, (now, set()))
        if now - first > AGGREGATE_WINDOW_S:
            first, messages = now, set()
        messages.add(message)
        rec.similar[agg_key] = (now, messages)
        if len(messages) >= AGGREGATE_MAX_EVENTS:
            messages.discard(message)
            messages.discard(next(iter(sorted(messages))))
            messages.add(message)
            message = f"(combined from similar events): {message}"
            key = (*agg_key, "")
        hit = rec.cache.get(key)
        if hit is not None:
            existing = store.get(EVENTS, hit[0], hit[1])
            if existing is not None:
                ev = clone(existing)
                ev["count"] = int(ev.get("count", 1)) + 1
                ev["lastTimestamp"] = ts
                ev["message"] = message
                ev["metadata"].pop("resourceVersion", None)
                out = store.update(EVENTS, ev)
                _schedule_expiry(twin, hit[0], hit[1], now)
                return out
            del rec.cache[key]
        rec.seq += 1
        name = f"{meta.get('name', 'unknown')}.{int(now * 1e9) + rec.seq:x}"
        source: Obj = {"component": component}
        if host:
            source["host"] = host
        ev = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": object_reference(involved, field_path),
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "type": type,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": host or "",
        }
        out = store.create(EVENTS, ev)
        rec.cache[key] = (namespace, name)
        _schedule_expiry(twin, namespace, name, now)
        return out


CONTROL_PLANE_HOST = "twin-control-plane"


def _accepts_events(store: Any, namespace: str) -> bool:
    """False when the namespace is gone or terminating (the apiserver refuses new objects there)."""
    ns_obj = store.get(NAMESPACES, "", namespace)
    if ns_obj is None or ns_obj.get("metadata", {}).get("deletionTimestamp"):
        return False
    return bool(ns_obj.get("status", {}).get("phase") != "Terminating")


def _record_series_event(
    twin: Twin, involved: Obj, reason: str, message: str, type: str, component: str, action: str
) -> Obj | None:
    store = twin.store
    meta = involved.get("metadata", {})
    namespace = meta.get("namespace") or "default"
    if not _accepts_events(store, namespace):
        return None
    now = twin.now()
    rec = _recorder(twin)
    key = ("v1events", component, namespace, str(meta.get("uid", "")), type, reason, action, message)
    with twin.lock:
        hit = rec.cache.get(key)
        if hit is not None:
            existing = store.get(EVENTS, hit[0], hit[1])
            if existing is not None:
                ev = clone(existing)
                count = int((ev.get("series") or {}).get("count", 1)) + 1
                ev["series"] = {"count": count, "lastObservedTime": micro_time(now)}
                ev["metadata"].pop("resourceVersion", None)
                out = store.update(EVENTS, ev)
                _schedule_expiry(twin, hit[0], hit[1], now)
                return out
            del rec.cache[key]
        rec.seq += 1
        name = f"{meta.get('name', 'unknown')}.{int(now * 1e9) + rec.seq:x}"
        ev = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": object_reference(involved),
            "reason": reason,
            "message": message,
            "source": {},
            "firstTimestamp": None,
            "lastTimestamp": None,
            "type": type,
            "eventTime": micro_time(now),
            "action": action,
            "reportingComponent": component,
            "reportingInstance": f"{component}-{CONTROL_PLANE_HOST}",
        }
        out = store.create(EVENTS, ev)
        rec.cache[key] = (namespace, name)
        _schedule_expiry(twin, namespace, name, now)
        return out


def _schedule_expiry(twin: Twin, namespace: str, name: str, now: float) -> None:
    def expire() -> None:
        if twin.store.get(EVENTS, namespace, name) is not None:
            twin.store.delete(EVENTS, namespace, name)
        rec = _recorder(twin)
        for k, v in list(rec.cache.items()):
            if v == (namespace, name):
                del rec.cache[k]
                break

    twin.scheduler.at(now + EVENT_TTL_S, expire, key=("event-ttl", namespace, name))
