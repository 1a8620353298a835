"""The goal text an agent on the twin is given (nothing in it reveals the scenario or the fault)."""

from __future__ import annotations

SRE_GOAL = (
    "You are an SRE on call for the application running in namespace {namespace} of this Kubernetes "
    "cluster. Alerts are firing or users may be affected. Diagnose the incident: identify the "
    "root-cause entities (as namespace/Kind/name) and how the fault propagated to the alerting "
    "services, then mitigate it on the cluster so that the alerts clear and the application works "
    "end to end. If nothing is wrong, report no contributing entities. Write your diagnosis as JSON "
    "(entities, propagations, alerts_explained) to agent_output.json in your work folder."
)


def sre_goal(namespace: str) -> str:
    return SRE_GOAL.format(namespace=namespace)


FINOPS_GOAL = (
    "You are the FinOps engineer for the application running in namespace {namespace} of this "
    "Kubernetes cluster. A cost alert is firing: the namespace spends more than it did last week. "
    "Find the inefficiency (the root-cause entities, as namespace/Kind/name, and how it drives the "
    "spend) and remove it on the cluster so that the cost alert clears, without breaking the "
    "application: it must keep serving its users end to end. OpenCost's API is at the URL in "
    "endpoints.json (opencost_url); its cost metrics are in Prometheus. If nothing is wasted, report "
    "no contributing entities. Write your diagnosis as JSON (entities, propagations, "
    "alerts_explained) to agent_output.json in your work folder."
)


def finops_goal(namespace: str) -> str:
    return FINOPS_GOAL.format(namespace=namespace)
