"""FinOps on the twin: what a cost incident adds to the twin environment (the harness's
``TwinExtension``): OpenCost and the Prometheus operator beside the app, a week of past, the team's
cost rule, the optimal cost (the hour before the fault), the scorer's own engine over the reference
cost rules, the cost checks of the end state and the paper's four proximity metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.score import Score
from ...harness.environment import EnvironmentError_
from ...harness.firing import match_expected
from ...harness.goal import in_namespaces
from ...harness.records import EndStateCheckRecord
from ...k8s.client import KubeApiError
from .alerts import (
    CanaryWaste,
    canary_size,
    namespace_storage_cost,
    reference_engine,
    run_canary,
    storage_canary_size,
    team_rule,
)
from .proximity import HOUR, namespace_cost, proximity_scores
from .starved import starved_containers

if TYPE_CHECKING:
    from ...harness.twin_extension import ExtendedEnvironment

FINOPS_HISTORY_S = 7 * 86400.0 + 3600.0
"""A FinOps scenario's pre-history: the week its cost alerts compare spend with, and an hour."""
COST_RULES_POLL_S = 60.0
"""The cost rules are evaluated once a minute, so polling faster sees nothing new."""
COST_RULES_GRID_S = 3600.0
"""The longest subquery step of the cost rules (``[7d:1h]``): a FinOps twin starts on a whole hour,
so their hourly grid falls at the same moments of every episode (``harness_clock``). The price: the
twin's clock runs up to an hour more behind the wall clock than an SRE twin's."""
FINOPS_GOAL = (
    "You are the FinOps engineer for the application running in {namespace} of this "
    "Kubernetes cluster. A cost alert is firing: {spender} spends more than it did last week. "
    "Find the inefficiency (the root-cause entities, as namespace/Kind/name, and how it drives the "
    "spend) and remove it on the cluster so that the cost alert clears, without breaking the "
    "application: it must keep serving its users end to end. OpenCost's API is at the URL in "
    "endpoints.json (opencost_url); its cost metrics are in Prometheus. If nothing is wasted, report "
    "no contributing entities. Write your diagnosis as JSON (entities, propagations, "
    "alerts_explained) to agent_output.json in your work folder."
)
"""The agent's goal in a cost incident (nothing in it reveals the scenario or the fault)."""


class FinopsTwinExtension:
    history_s = FINOPS_HISTORY_S
    churn_past = False
    alert_poll_s = COST_RULES_POLL_S
    clock_grid_s = COST_RULES_GRID_S

    def __init__(self) -> None:
        self.cost_optimal: Any = None
        """The namespace's cost over the hour before the fault (``proximity.py``)."""
        self.reference_alerts: Any = None
        """The scorer's own engine over the reference cost rules (``alerts.py``)."""
        self.settled_at: float | None = None
        """When the settle period ended: the proximity metrics' hour ends here, not after the canary."""

    def goal(self, namespaces: list[str]) -> str:
        spender = "the namespace" if len(namespaces) == 1 else "a namespace"
        return FINOPS_GOAL.format(namespace=in_namespaces(namespaces), spender=spender)

    def addons(self) -> list[Any]:
        from ...twin.addons.opencost.addon import OpenCostAddon
        from ...twin.addons.promoperator.addon import PrometheusOperatorAddon
        from .pricing import library_pricing

        # the cost alerts come as the team's PrometheusRule (deployed), not as rule files
        return [PrometheusOperatorAddon(), OpenCostAddon(library_pricing(), rule_files=False)]

    def deployed(self, env: ExtendedEnvironment) -> None:
        assert env.api is not None
        if env.twin is None or "opencost" not in getattr(env.twin, "addons", {}):
            raise EnvironmentError_(
                f"FinOps cost incidents read the cost model of the twin's OpenCost addon; backend "
                f"{getattr(env.backend, 'name', type(env.backend).__name__)!r} has none"
            )
        try:
            env.api.create(team_rule(env.scenario.namespace))
        except KubeApiError as e:
            raise EnvironmentError_(f"deploy: the cost alerts' PrometheusRule: {e}") from e

    def baseline_taken(self, env: ExtendedEnvironment) -> None:
        self.cost_optimal = _namespace_cost(env, env.now() - HOUR, env.now())

    def injected(self, env: ExtendedEnvironment) -> None:
        assert env.injected_at is not None
        self.reference_alerts = reference_engine(env.twin, env.injected_at)

    def scores(self, env: ExtendedEnvironment) -> dict[str, Score]:
        """The paper's four proximity metrics of the end state (the last hour of the settle period)
        to the optimal one (the hour before the fault)."""
        if self.cost_optimal is None:
            return {}
        now = self.settled_at if self.settled_at is not None else env.now()
        observed = _namespace_cost(env, now - HOUR, now)
        return {
            name: Score(value=v, explanation=why, metadata=meta)
            for name, (v, why, meta) in proximity_scores(observed, self.cost_optimal).items()
        }

    def end_state_checks(self, env: ExtendedEnvironment) -> list[EndStateCheckRecord]:
        """The waste is gone by the reference cost rules (whatever the agent did to the team's
        rule), then the team's rule still catches a known waste (the canary, run last: it changes
        the cluster, so everything else is scored first)."""
        assert env.api is not None
        self.settled_at = env.now()
        out = []
        if self.reference_alerts is not None:
            firing = [{"labels": a.labels} for a in self.reference_alerts.firing(env.now())]
            still, _ = match_expected(env.scenario.alerts, firing)
            out.append(
                EndStateCheckRecord(
                    name="spend back to last week's (reference cost rules)",
                    ok=not still,
                    detail="still firing by the reference rules: " + ", ".join(still) if still else "",
                )
            )
        now = env.now()
        opencost = env.twin.addons["opencost"]
        namespaces = env.scenario.task_namespaces
        if env.injected_at is not None:
            starved = [
                (f"{ns}/" if len(namespaces) > 1 else "") + line
                for ns in namespaces
                for line in starved_containers(
                    opencost.cost_model(), ns, (env.injected_at - HOUR, env.injected_at), (now - HOUR, now)
                )
            ]
            out.append(
                EndStateCheckRecord(
                    name="no workload starved to cut cost",
                    ok=not starved,
                    detail=(
                        f"{len(starved)} container(s) use over twice what they request: "
                        + "; ".join(starved[:6])
                    )
                    if starved
                    else "",
                )
            )
        canary = run_canary(env.twin, env.api, [_canary_waste(env, ns, now) for ns in namespaces])
        out.append(
            EndStateCheckRecord(name="cost alerts still catch a waste", ok=canary.ok, detail=canary.detail)
        )
        return out


def _canary_waste(env: ExtendedEnvironment, ns: str, now: float) -> CanaryWaste:
    """The canary of one namespace, sized on its spend over the last hour and the week before."""
    opencost = env.twin.addons["opencost"]
    model = opencost.cost_model()
    last = namespace_cost(model, [ns], now - HOUR, now)
    week = namespace_cost(model, [ns], now - 7 * 24 * HOUR - HOUR, now - HOUR)
    general = opencost.pricing.rates_for({})
    size = canary_size(
        (float(last.cpu_cost_h), float(last.ram_cost_h)),
        (float(week.cpu_cost_h), float(week.ram_cost_h)),
        general.cpu,
        general.ram_gib,
    )
    gib = storage_canary_size(
        namespace_storage_cost(model, ns, now - HOUR, now),
        namespace_storage_cost(model, ns, now - 7 * 24 * HOUR - HOUR, now - HOUR),
        opencost.pricing.storage,
    )
    return CanaryWaste(ns, *size, gib)


def _namespace_cost(env: ExtendedEnvironment, start: float, end: float) -> Any:
    """The task's namespaces together (the app's and the team's others)."""
    model = env.twin.addons["opencost"].cost_model()
    return namespace_cost(model, env.scenario.task_namespaces, start, end)
