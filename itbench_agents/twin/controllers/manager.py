"""Wires every controller to the twin: one store listener that updates the shared index and
hands each change to every controller (which queue work on ``twin.scheduler``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..kube.store import ChangeEvent
from .base import Controller
from .cluster import (
    NodeHeartbeat,
    NodeLifecycleController,
    QuotaController,
    ServiceAccountController,
)
from .deployment import DeploymentController
from .disruption import DisruptionController
from .endpoints import EndpointsController
from .gc import GarbageCollector
from .index import Index
from .kubelet import Kubelet
from .podscheduler import PodScheduler
from .replicaset import ReplicaSetController
from .taint_eviction import TaintEvictionController
from .volumes import PersistentVolumeController

if TYPE_CHECKING:
    from ..core import TwinCore as Twin


class ControllerManager:
    def __init__(self, twin: Twin) -> None:
        self.twin = twin
        self.index = Index(twin.store)
        self.kubelet = Kubelet(twin, self.index)
        self.scheduler = PodScheduler(twin, self.index)
        self.controllers: list[Controller] = [
            GarbageCollector(twin, self.index),
            ServiceAccountController(twin, self.index),
            NodeLifecycleController(twin, self.index),
            TaintEvictionController(twin, self.index),
            DeploymentController(twin, self.index),
            ReplicaSetController(twin, self.index),
            PersistentVolumeController(twin, self.index),
            self.scheduler,
            self.kubelet,
            EndpointsController(twin, self.index),
            QuotaController(twin, self.index),
            DisruptionController(twin, self.index),
            NodeHeartbeat(twin, self.index),
        ]
        for extra in _optional_controllers(twin, self.index):
            self.controllers.append(extra)

    def install(self) -> None:
        for ev in self.twin.store.log:
            self.index.observe(ev)
        self.twin.store.subscribe(self._on_change)
        self.twin.controllers = self  # type: ignore[attr-defined]
        self.twin.kubelet = self.kubelet  # type: ignore[attr-defined]

    def _on_change(self, ev: ChangeEvent) -> None:
        self.index.observe(ev)
        if self.index.routine(ev):  # heartbeats: nothing derived depends on them
            return
        for c in self.controllers:
            c.on_change(ev)


def _optional_controllers(twin: Twin, index: Index) -> list[Controller]:
    out: list[Controller] = []
    try:
        from .statefulset import StatefulSetController

        out.append(StatefulSetController(twin, index))
    except ImportError:
        pass
    try:
        from .daemonset import DaemonSetController

        out.append(DaemonSetController(twin, index))
    except ImportError:
        pass
    try:
        from .job import CronJobController, JobController

        out.extend([JobController(twin, index), CronJobController(twin, index)])
    except ImportError:
        pass
    try:
        from .hpa import HorizontalPodAutoscalerController

        out.append(HorizontalPodAutoscalerController(twin, index))
    except ImportError:
        pass
    return out
