"""Shared plumbing for controllers: the work queue on the twin's scheduler and safe store writes."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from ...k8s.kinds import GroupResource
from ..kube.errors import ApiError
from ..kube.store import ChangeEvent, clone
from .index import controller_uid

if TYPE_CHECKING:
    from ..core import TwinCore as Twin
    from .index import Index

Obj = dict[str, Any]


class Controller:
    """A controller reacts to store changes by queueing keys; ``sync`` runs later on the scheduler."""

    name = "controller"

    def __init__(self, twin: Twin, index: Index) -> None:
        self.twin = twin
        self.store = twin.store
        self.index = index

    def on_change(self, ev: ChangeEvent) -> None:  # pragma: no cover - overridden
        pass

    def enqueue(self, key: Hashable, fn: Callable[[], None] | None = None) -> None:
        """Run ``self.sync(key)`` (or ``fn``) soon, once, however often it is asked for now."""
        action = fn or (lambda: self._safe_sync(key))
        self.twin.scheduler.soon(action, key=(self.name, key))

    def enqueue_owner(self, obj: Obj, owner_gr: GroupResource) -> None:
        """Queue the ``(namespace, name)`` key of ``obj``'s controller when that controller is an ``owner_gr``."""
        ref = self.index.by_uid.get(controller_uid(obj) or "")
        if ref is not None and ref[0] == owner_gr:
            self.enqueue((ref[1], ref[2]))

    def enqueue_at(self, when: float, key: Hashable) -> None:
        self.twin.scheduler.at(when, lambda: self._safe_sync(key), key=(self.name, "timer", key))

    def _safe_sync(self, key: Hashable) -> None:
        try:
            self.sync(key)
        except ApiError:  # the object changed under us (deleted, conflict): the next event re-queues it
            return  # (not contextlib.suppress: a FinOps week runs 40,000 syncs of an HPA)

    def sync(self, key: Any) -> None:  # pragma: no cover - overridden
        pass

    def now(self) -> float:
        return self.twin.now()


def update_status(twin: Twin, gr: GroupResource, obj: Obj, status: Obj) -> Obj:
    """Write ``status`` if it differs from what is stored."""
    if obj.get("status") == status:
        return obj
    new = {"metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace", "")}}
    new["status"] = status
    return twin.store.update(gr, new, status_only=True)


def update_object(twin: Twin, gr: GroupResource, obj: Obj, mutate: Callable[[Obj], None]) -> Obj:
    """Apply ``mutate`` to a copy of ``obj`` and write it if anything changed."""
    new = clone(obj)
    mutate(new)
    if new == obj:
        return obj
    new["metadata"].pop("resourceVersion", None)
    return twin.store.update(gr, new, owned=True)  # ``new`` is this function's own copy
