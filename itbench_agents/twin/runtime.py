"""The container-runtime behaviour hook: what happens when the kubelet starts a container.

The kubelet controller (``twin/controllers``) owns the *mechanics* — image-pull events, start,
restarts with CrashLoopBackOff back-off, probes turning into Ready conditions and Unhealthy events,
statuses. A :class:`ContainerRuntime` owns the *verdict*: given the pod, the container and the
cluster as it is now, does the image pull, does the container start, how long does it run, is it
ready? The app-behaviour model (``twin/app``) implements it from app and fault state; the default
(:class:`DefaultRuntime`) says "image pulls, starts, becomes ready".

The kubelet asks again whenever the cluster changes; when the verdict for a running container
changes (a StressChaos appears, a limit is lowered), it applies the new verdict from that moment.
A runtime that also implements :class:`TracedRuntime` says what each verdict read
(:class:`VerdictReads`), so the kubelet asks again only for containers whose inputs changed
(start-up then costs time linear in the number of pods, not quadratic); any other runtime is
asked again for every running container on every change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..k8s.quantity import parse_quantity
from ..k8s.times import parse_rfc3339

Obj = dict[str, Any]


@dataclass(frozen=True)
class ContainerVerdict:
    """What the runtime says will happen to one container under the current cluster state."""

    # --- before the process starts
    pull_error: str | None = None
    """If set, the image cannot be pulled: the message of the ``Failed`` event, e.g.
    'Failed to pull image "x:bad": rpc error: code = NotFound desc = ...'. The container
    waits in ErrImagePull, then ImagePullBackOff."""
    config_error: str | None = None
    """If set, CreateContainerConfigError with this message (missing ConfigMap/Secret key...)."""
    start_error: str | None = None
    """If set, the process cannot start (bad command: 'exec: "foo": executable file not found in
    $PATH'); terminated with reason StartError / ContainerCannotRun, exit code 128."""
    hang: bool = False
    """The process starts and never exits and never becomes ready (e.g. an init container that hangs)."""

    # --- once running
    exit_after_s: float | None = None
    """The process exits this many seconds after it starts (None: runs until killed)."""
    exit_code: int = 1
    exit_reason: str = "Error"
    """Terminated reason: 'Error', 'OOMKilled', 'Completed'."""
    exit_message: str | None = None
    ready: bool = True
    """Whether the readiness probe passes (containers without a probe are ready when started)."""
    ready_delay_s: float = 0.0
    """Seconds after start before the container becomes ready."""
    unready_message: str | None = None
    """Event message when the readiness probe fails, e.g. 'Readiness probe failed: Get
    "http://10.1.0.5:8081/healthz": dial tcp 10.1.0.5:8081: connect: connection refused'."""
    liveness_kill_after_s: float | None = None
    """The liveness probe fails so the kubelet kills the container this long after start."""
    liveness_message: str | None = None


@dataclass(frozen=True)
class ResourceUsage:
    """Usage of one container at an instant (for metrics.k8s.io and cAdvisor-style metrics)."""

    cpu_cores: float
    memory_bytes: float


@runtime_checkable
class ContainerRuntime(Protocol):
    """The behaviour hook the kubelet controller consults."""

    def verdict(
        self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float
    ) -> ContainerVerdict:
        """What happens to ``container`` of ``pod`` under the cluster state at ``now``."""
        ...

    def usage(self, pod: Obj, container: Obj, now: float) -> ResourceUsage:
        """Current CPU and memory use of a running container."""
        ...


VERIFY_ENV = "ITBENCH_TWIN_VERIFY_VERDICTS"
"""Set to 1 to check every kept verdict and kept effect against a fresh computation (tests do)."""


class StaleCacheError(AssertionError):
    """A kept result differs from a fresh computation (raised only when ``VERIFY_ENV`` is set)."""


@dataclass(frozen=True)
class VerdictReads:
    """What one verdict was computed from, so that the kubelet knows when to ask again."""

    objects: frozenset[tuple[Any, str, str]] = frozenset()
    """API objects read by name, as ``(GroupResource, namespace, name)`` (absent ones too): a change
    to any of them means asking again."""
    derived: Any = None
    """The runtime's own derived state the verdict read (service load, flag and chaos effects),
    as a value the runtime can compare with its current state (:meth:`TracedRuntime.still_current`)."""
    always: bool = False
    """The verdict read state no name pins down (other pods' readiness, endpoints, the time):
    ask again on every change."""


@runtime_checkable
class TracedRuntime(Protocol):
    """A runtime that reports what each verdict read (optional, on top of :class:`ContainerRuntime`)."""

    def traced_verdict(
        self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float
    ) -> tuple[ContainerVerdict, VerdictReads]:
        """The verdict (exactly what ``verdict`` would answer) and what it read."""
        ...

    def still_current(self, reads: VerdictReads, now: float) -> bool:
        """Whether the derived state recorded in ``reads`` is still what the runtime has at ``now``."""
        ...

    def derived_generation(self, now: float) -> int:
        """A number that changes whenever the runtime's derived state may have changed."""
        ...


class DefaultRuntime:
    """Every image pulls, every container starts and becomes ready; usage is half the request."""

    def verdict(
        self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float
    ) -> ContainerVerdict:
        if init:
            return ContainerVerdict(exit_after_s=1.0, exit_code=0, exit_reason="Completed")
        return ContainerVerdict()

    def usage(self, pod: Obj, container: Obj, now: float) -> ResourceUsage:
        req = container.get("resources", {}).get("requests", {})
        lim = container.get("resources", {}).get("limits", {})
        cpu = parse_quantity(req.get("cpu") or lim.get("cpu") or "10m") / 2
        mem = parse_quantity(req.get("memory") or lim.get("memory") or "64Mi") / 2
        return ResourceUsage(cpu, mem)


def started_at(pod: dict[str, Any], name: str, init: bool, now: float) -> float:
    """When container ``name`` (an init container with ``init``) started running (``now`` if it is not running)."""
    key = "initContainerStatuses" if init else "containerStatuses"
    for cs in pod.get("status", {}).get(key) or []:
        if cs.get("name") == name:
            ts = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
            if ts:
                return parse_rfc3339(ts)
    return now
