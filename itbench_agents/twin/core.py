"""``TwinCore``: the twin as its parts see it — the store, the scheduler, the clock, the runtime and
the registries the parts add themselves to. Controllers, the behaviour model, faults and addons are
typed against this protocol, never against :class:`~itbench_agents.twin.instance.Twin`, which wires
them (so they do not import the module that imports them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..core.endpoints import Endpoints
    from ..k8s.kinds import GroupResource
    from .clock import Clock
    from .health import HealthTimeline
    from .kube.store import ObjectStore
    from .runtime import ContainerRuntime
    from .scheduler import Scheduler
    from .telemetry.sources import LogSource, SeriesSource, TraceSource

Obj = dict[str, Any]


class TwinCore(Protocol):
    seed: int
    clock: Clock
    lock: Any
    """A re-entrant lock held while the cluster changes (``threading.RLock``)."""
    scheduler: Scheduler
    store: ObjectStore
    runtime: ContainerRuntime
    health: HealthTimeline
    masked: set[str]
    app: Any
    behaviour: Any
    metrics: SeriesSource | None
    logs: LogSource | None
    traces: TraceSource | None
    alerts: Any
    validators: dict[GroupResource, list[Callable[[Obj], list[tuple[str, str, str]]]]]
    admission_hooks: list[Callable[[Any], list[str]]]
    addons: dict[str, Any]
    memo: dict[str, dict[Any, Any]]
    endpoints: Endpoints | None
    admin_token: str
    quiet_until: float | None
    advance_budget: Any
    created_at: float

    def now(self) -> float: ...

    def sync(self) -> None: ...

    def advance(self, seconds: float, step: float = 5.0) -> None: ...

    def apply(self, objs: Iterable[Obj]) -> list[Obj]: ...

    def get(self, gr: GroupResource, namespace: str, name: str) -> Obj | None: ...

    def install_addon(self, addon: Any) -> Any: ...

    def install_observability(self) -> None: ...

    def default_namespace(self) -> str: ...
