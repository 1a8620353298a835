"""Kubernetes controllers of the twin: what kube-controller-manager, kube-scheduler and the
kubelets do in a real cluster, as callbacks on the twin's discrete-event scheduler.

- :func:`install_controllers` subscribes every controller to the store.
- :func:`bootstrap_cluster` creates the nodes and system namespaces of a fresh cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .bootstrap import bootstrap_cluster

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

__all__ = ["bootstrap_cluster", "install_controllers"]


def install_controllers(twin: Twin) -> None:
    """Install the controller manager on ``twin`` (listeners on ``twin.store``, work on ``twin.scheduler``)."""
    from .manager import ControllerManager

    ControllerManager(twin).install()
