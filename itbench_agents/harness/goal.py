"""The goal text an SRE agent on the twin is given (nothing in it reveals the scenario or the fault).
A persona with a goal of its own gives it in its twin extension (``personas/finops/twin_extension.py``)."""

from __future__ import annotations

SRE_GOAL = (
    "You are an SRE on call for the application running in {namespace} of this Kubernetes "
    "cluster. Alerts are firing or users may be affected. Diagnose the incident: identify the "
    "root-cause entities (as namespace/Kind/name) and how the fault propagated to the alerting "
    "services, then mitigate it on the cluster so that the alerts clear and the application works "
    "end to end. If nothing is wrong, report no contributing entities. Write your diagnosis as JSON "
    "(entities, propagations, alerts_explained) to agent_output.json in your work folder."
)


def in_namespaces(namespaces: list[str]) -> str:
    """``namespace a`` or ``namespaces a and b`` (``a, b and c``): where a goal says the app runs."""
    if len(namespaces) == 1:
        return f"namespace {namespaces[0]}"
    return f"namespaces {', '.join(namespaces[:-1])} and {namespaces[-1]}"


def sre_goal(namespaces: list[str]) -> str:
    return SRE_GOAL.format(namespace=in_namespaces(namespaces))
