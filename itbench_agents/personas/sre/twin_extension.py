"""What the SRE persona adds to the twin environment for its scenario files (``scenarios/sre/``):
the on-call engineer's goal, and nothing else — the app as the scenario deploys it, the run's
history, the churn's past, the alert rules' usual poll, and the twin scenario's own scores
(diagnosis, mitigation: ``evaluation/``, ``harness/endstate.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.score import Score
from ...harness.goal import in_namespaces
from ...harness.twin_extension import ALERT_POLL_S

if TYPE_CHECKING:
    from ...harness.records import EndStateCheckRecord
    from ...harness.twin_extension import ExtendedEnvironment

SRE_GOAL = (
    "You are an SRE on call for the application running in {namespace} of this Kubernetes "
    "cluster. Alerts are firing or users may be affected. Diagnose the incident: identify the "
    "root-cause entities (as namespace/Kind/name) and how the fault propagated to the alerting "
    "services, then mitigate it on the cluster so that the alerts clear and the application works "
    "end to end. If nothing is wrong, report no contributing entities. Write your diagnosis as JSON "
    "(entities, propagations, alerts_explained) to agent_output.json in your work folder."
)
"""The agent's goal in an SRE incident (nothing in it reveals the scenario or the fault)."""


class SreTwinExtension:
    history_s = 0.0
    """No past beyond what the run asks for (``--history``)."""
    churn_past = True
    alert_poll_s = ALERT_POLL_S
    clock_grid_s = 60.0

    def goal(self, namespaces: list[str]) -> str:
        return SRE_GOAL.format(namespace=in_namespaces(namespaces))

    def addons(self) -> list[Any]:
        return []

    def deployed(self, env: ExtendedEnvironment) -> None:
        return None

    def baseline_taken(self, env: ExtendedEnvironment) -> None:
        return None

    def injected(self, env: ExtendedEnvironment) -> None:
        return None

    def end_state_checks(self, env: ExtendedEnvironment) -> list[EndStateCheckRecord]:
        return []

    def scores(self, env: ExtendedEnvironment) -> dict[str, Score]:
        return {}
