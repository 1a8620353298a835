"""A CISO scenario's cluster: the twin with Kyverno installed and running and an OPA beside it, the
scenario's namespace, and one variant of its workload (``violating`` or ``compliant``)."""

from __future__ import annotations

from typing import Any, Literal

from ...twin.clock import Clock
from ...twin.instance import Twin
from .spec import CisoScenario

Variant = Literal["violating", "compliant"]
KYVERNO_START_S = 30.0
"""Twin seconds for Kyverno's controllers to become available after its install."""


def bring_up(scenario: CisoScenario, variant: Variant = "violating", *, seed: int = 0) -> Twin:
    twin = start_cluster(scenario, seed=seed)
    place_workload(twin, scenario, variant)
    return twin


def start_cluster(scenario: CisoScenario, *, seed: int = 0, clock: Clock | None = None) -> Twin:
    """The twin with Kyverno running, an OPA beside it (its REST API and the agents' ``opa``
    command), and, for ``kyverno-update``, the policies in force before the agent starts."""
    twin = Twin(seed=seed, clock=clock)
    twin.install_addon("kyverno")
    twin.install_addon("opa")
    twin.advance(KYVERNO_START_S)
    if scenario.existing:
        with twin.lock:
            twin.apply(scenario.existing)
        twin.advance(5)
    return twin


def place_workload(twin: Twin, scenario: CisoScenario, variant: Variant = "violating") -> list[str]:
    """Create the scenario's namespace and one variant of its workload; returns what was created."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": scenario.namespace}}
    ]
    for doc in scenario.violating if variant == "violating" else scenario.compliant:
        meta = {**(doc.get("metadata") or {}), "namespace": scenario.namespace}
        docs.append({**doc, "metadata": meta})
    with twin.lock:
        twin.apply(docs)
    twin.advance(10)  # the workload's pods start; the reports controller reports on them
    return [f"created {d['kind']} {scenario.namespace}/{d['metadata']['name']}" for d in docs[1:]]


def reports(twin: Twin) -> list[dict[str, Any]]:
    """Every PolicyReport and ClusterPolicyReport in the cluster (what ``kubectl get polr,cpolr -A``
    lists), after bringing the twin up to its clock."""
    from ...twin.addons.kyverno.addon import CLUSTER_REPORTS_GR, REPORTS_GR

    twin.sync()
    return [*twin.store.list(REPORTS_GR), *twin.store.list(CLUSTER_REPORTS_GR)]


def deploy_policies(twin: Twin, policies: list[dict[str, Any]], *, user: str = "kubernetes-admin") -> None:
    """Create policies as a client would: through the admission webhooks (Kyverno's policy webhook
    refuses a policy it cannot run, with its message), then into the store."""
    from ...twin.addons.base import request_for, run_admission_hooks
    from ...twin.kube.auth.users import UserInfo
    from ...twin.kube.resources import registry_for

    registry = registry_for(twin)
    admin = UserInfo(user, groups=("system:masters", "system:authenticated"))
    with twin.lock:
        twin.sync()
        for doc in policies:
            info = registry.for_object(doc)
            run_admission_hooks(twin, request_for(info, "CREATE", doc, user=admin))
            twin.apply([doc])
    twin.advance(5)
