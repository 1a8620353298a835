"""Which pod changes of the app namespace can alter the app's health: those of pods an app workload
or a Service of the namespace selects.

A propagation (``propagation.py``) reaches pods only through selectors: each service's instances
are the pods its Deployment or StatefulSet selects (``ClusterView._service_pods``, where a
multi-binary image's ``runs_as`` is decided too), and each call's endpoints the pods its Service
selects (``network.connect``). A pod that neither selects — a Job's, a CronJob's, the FinOps
canary's, a debug pod — changes no propagation, whatever happens to it, unless it was selected
before (relabelled away: its leaving does). Chaos experiments pick pods by selectors of their own:
the behaviour model treats every pod change as relevant while one has been seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...k8s.selectors import matches_map
from ..kube.store import ChangeEvent, ObjectStore
from .cluster import PODS, SERVICES

Obj = dict[str, Any]


class SelectedPods:
    """The pods of ``namespace`` an app workload (``workload_service``: the service whose workload
    selects a pod, or None) or a Service selects, as of each pod's latest change."""

    def __init__(
        self, store: ObjectStore, namespace: str, workload_service: Callable[[Obj], str | None]
    ) -> None:
        self._store = store
        self._ns = namespace
        self._workload_service = workload_service
        self._selectors: list[dict[str, str]] | None = None
        self._selected: set[str] = set()
        """Uids of the pods selected when last seen."""
        for pod in store.list(PODS, namespace):
            if self.selects(pod):
                self._selected.add(pod["metadata"].get("uid", ""))

    def services_changed(self) -> None:
        """A Service was written: its selector is read again."""
        self._selectors = None

    def selects(self, pod: Obj) -> bool:
        """Whether an app workload or a Service of the namespace selects ``pod`` now."""
        if self._workload_service(pod) is not None:
            return True
        labels = pod.get("metadata", {}).get("labels") or {}
        return any(matches_map(sel, labels) for sel in self._service_selectors())

    def _service_selectors(self) -> list[dict[str, str]]:
        if self._selectors is None:
            # a Service without a selector selects no pod (its endpoints are managed by hand)
            self._selectors = [
                sel
                for svc in self._store.list(SERVICES, self._ns)
                if (sel := (svc.get("spec") or {}).get("selector") or {})
            ]
        return self._selectors

    def outside(self, ev: ChangeEvent) -> bool:
        """Whether the pod change ``ev`` (of this namespace) is of a pod that is not selected and
        was not when last seen; notes which it is."""
        uid = ev.obj.get("metadata", {}).get("uid", "")
        was = uid in self._selected
        now = ev.type != "DELETED" and self.selects(ev.obj)
        if now:
            self._selected.add(uid)
        else:
            self._selected.discard(uid)
        return not (was or now)
