"""The seam through which a system beside Kubernetes (Kyverno, an OPA server, OpenCost) plugs into the twin without edits inside ``Twin``.

An addon is installed once (``Twin.install_addon``): it creates what the real system's Helm chart
would (CRDs, its namespace and workloads), subscribes controllers to the store or the scheduler, and
may register *validating admission hooks* — the twin's ValidatingWebhookConfigurations. The API
server calls every hook after its own admission chain, for every CREATE, UPDATE and DELETE from a
client, and for the pods and claims its controllers create, exactly where a real apiserver calls
webhooks. A hook denies by raising ``WebhookDenied``; what it returns are warnings (the
``Warning`` headers kubectl prints).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..kube.errors import ApiError

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

Obj = dict[str, Any]


@dataclass(frozen=True)
class AdmissionRequest:
    """What an ``admission.k8s.io/v1`` AdmissionReview's request carries, as the hooks need it."""

    operation: str  # CREATE | UPDATE | DELETE
    group: str
    version: str
    kind: str
    resource: str
    namespace: str
    name: str
    obj: Obj | None
    """The new object (None for DELETE)."""
    old: Obj | None = None
    """The stored object (UPDATE, DELETE)."""
    username: str = ""
    groups: tuple[str, ...] = ()
    dry_run: bool = False
    sub_resource: str = ""


class WebhookDenied(ApiError):
    """A webhook's rejection as the apiserver returns it: code 400 unless the webhook set one, no
    reason, ``admission webhook "<name>" denied the request: <message>``."""

    def __init__(self, webhook: str, message: str, code: int = 400) -> None:
        super().__init__(code, "", f'admission webhook "{webhook}" denied the request: {message}')


AdmissionHook = Callable[[AdmissionRequest], list[str]]
"""A validating webhook: returns its warnings, raises ``WebhookDenied`` to reject the request."""


class Addon(Protocol):
    """A system the twin can run beside Kubernetes."""

    name: str

    def install(self, twin: Twin) -> None:
        """Create the system's CRDs and objects, subscribe its controllers, register its hooks."""
        ...


class ExportsMetrics(Protocol):
    """An addon whose system exports Prometheus metrics (OpenCost's cost metrics): the twin's
    Prometheus serves the family it returns beside cAdvisor's and kube-state-metrics'."""

    def metric_family(self) -> Any:
        """A ``telemetry.seriesdb.Family``."""
        ...


class ExportsRules(Protocol):
    """An addon that brings alerting rules (OpenCost's cost alerts): the twin's alert engine loads
    its rule files beside ``scenarios/rules/`` when it is installed before observability."""

    def rule_files(self) -> list[Any]:
        """Prometheus rule files (``pathlib.Path``)."""
        ...


class ServesApi(Protocol):
    """An addon that also serves its own HTTP API (OPA's REST API): ``Twin.serve`` starts an endpoint
    for it beside the twin's others and puts its URL in the ``Endpoints`` field ``endpoint_field``."""

    name: str
    endpoint_field: str

    def make_handler(self, twin: Twin) -> Callable[[Any], Any]:
        """The request handler (``httpserver.Handler``) of the addon's API."""
        ...


def run_admission_hooks(twin: Any, request: AdmissionRequest) -> list[str]:
    """Call every registered hook in order; the first denial stops the request."""
    warnings: list[str] = []
    for hook in getattr(twin, "admission_hooks", ()):
        warnings.extend(hook(request))
    return warnings


def request_for(
    info: Any,
    operation: str,
    obj: Obj | None,
    old: Obj | None = None,
    *,
    user: Any = None,
    dry_run: bool = False,
) -> AdmissionRequest:
    """The request for an operation on a resource type (a ``kube.resources.ResourceInfo``)."""
    meta = (obj if obj is not None else old or {}).get("metadata") or {}
    return AdmissionRequest(
        operation=operation,
        group=info.group,
        version=info.version,
        kind=info.kind,
        resource=info.resource,
        namespace=str(meta.get("namespace") or "") if info.namespaced else "",
        name=str(meta.get("name") or ""),
        obj=obj,
        old=old,
        username=str(getattr(user, "username", "") or ""),
        groups=tuple(getattr(user, "groups", ()) or ()),
        dry_run=dry_run,
    )
