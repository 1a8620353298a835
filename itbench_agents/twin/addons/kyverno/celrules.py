"""CEL validation as Kyverno runs it: ``validate.cel`` rules of a ClusterPolicy, Kyverno's
``ValidatingPolicy`` and Kubernetes' ``ValidatingAdmissionPolicy`` (with its bindings).

The three share one evaluation: ``matchConditions`` (all must hold, else the request is skipped),
``variables`` (in order, readable as ``variables.<name>``), then ``validations`` / ``expressions``
(all must be true, else fail with the message; an evaluation error is an error). Policies written
for Pods also check the Pod template of Deployments, CronJobs... (Kyverno's autogen), by
evaluating them on the template's Pod view.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .cel_eval import CelError, context_for, evaluate
from .match import label_selector_matches
from .values import wildcard_match

POD_CONTROLLERS = {
    "Deployment": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def pod_view(obj: dict[str, Any] | None, template: tuple[str, ...]) -> dict[str, Any] | None:
    """The Pod a controller's template describes (what autogen'd rules check)."""
    if obj is None:
        return None
    node: Any = obj
    for key in template:
        node = node.get(key) if isinstance(node, dict) else None
    node = node if isinstance(node, dict) else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": node.get("metadata") or {},
        "spec": node.get("spec") or {},
    }


def activation(
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    request: dict[str, Any],
    namespace: dict[str, Any] | None,
    params: Any = None,
) -> dict[str, Any]:
    return {
        "object": obj,
        "oldObject": old,
        "request": request,
        "namespaceObject": namespace,
        "params": params,
        "variables": {},
    }


def cached_activation(adm: Any, template: tuple[str, ...] | None) -> tuple[dict[str, Any], Any]:
    """The CEL activation of ``adm`` (the Pod of a controller's ``template`` for autogen'd rules)
    and its converted context, built once per request and kept on the Admission (``cel_cache``):
    every CEL rule of every policy on one request reads the same values."""
    key = (template, id(adm.params))
    hit = adm.cel_cache.get(key)
    if hit is not None and hit[0] is adm.params:
        return hit[1], hit[2]
    obj, old = adm.obj, adm.old
    if template:
        obj, old = pod_view(obj, template), pod_view(old, template)
    act = activation(obj, old, request_of(adm), namespace_object(adm), adm.params)
    context = context_for(act)
    adm.cel_cache[key] = (adm.params, act, context)
    return act, context


def run_validations(
    spec: dict[str, Any], act: dict[str, Any], validations_key: str = "validations", context: Any = None
) -> tuple[str, str]:
    """``(status, message)`` of one policy's (or rule's) CEL: skip / pass / fail / error.
    ``context``: the activation's converted context (:func:`cached_activation`), when there is one."""
    act = {**act, "variables": {}}  # this rule's variables: the cached activation stays as it was
    try:
        for cond in spec.get("matchConditions") or []:
            if not _true(evaluate(str(cond.get("expression", "")), act, context)):
                return "skip", f"match condition {cond.get('name', '')} not met"
    except CelError as exc:
        return "error", f"match condition: {exc}"
    variables: dict[str, Any] = {}
    act["variables"] = variables
    for var in spec.get("variables") or []:
        try:
            value = evaluate(str(var.get("expression", "")), act, context)
        except CelError as exc:
            return "error", f"variable {var.get('name')}: {exc}"
        variables[str(var.get("name"))] = value
    for check in spec.get(validations_key) or []:
        expression = str(check.get("expression", ""))
        try:
            ok = evaluate(expression, act, context)
        except CelError as exc:
            return "error", f"expression {expression!r}: {exc}"
        if not _true(ok):
            return "fail", _message(check, act, expression, context)
    return "pass", ""


def _true(value: Any) -> bool:
    return value is True


def _message(check: dict[str, Any], act: dict[str, Any], expression: str, context: Any = None) -> str:
    if check.get("messageExpression"):
        try:
            return str(evaluate(str(check["messageExpression"]), act, context))
        except CelError:
            pass
    return str(check.get("message") or f"failed expression: {expression}").strip()


# ------------------------------------------------------------------ matchConstraints
def plural(kind: str) -> str:
    info = _builtin_kinds().get(kind)
    if info is not None:
        return str(info.resource)
    k = kind.lower()
    if k.endswith("s") or k.endswith("x"):
        return k + "es"
    if k.endswith("y") and k[-2:-1] not in "aeiou":
        return k[:-1] + "ies"
    return k + "s"


def rule_matches(
    rule: dict[str, Any], resource: dict[str, Any], operation: str, subresource: str = ""
) -> bool:
    group, _, version = str(resource.get("apiVersion", "")).rpartition("/")
    resources = plural(str(resource.get("kind", "")))
    if subresource:
        resources += "/" + subresource
    name = str((resource.get("metadata") or {}).get("name", ""))

    def any_of(values: list[str] | None, have: str) -> bool:
        return not values or any(v == "*" or wildcard_match(v, have) for v in values)

    return (
        any_of(rule.get("apiGroups"), group)
        and any_of(rule.get("apiVersions"), version)
        and any_of(rule.get("operations"), operation)
        and any_of(rule.get("resources"), resources)
        and (not rule.get("resourceNames") or name in rule["resourceNames"])
    )


def constraints_match(
    constraints: dict[str, Any] | None,
    resource: dict[str, Any],
    operation: str,
    namespace_labels: dict[str, str],
) -> bool:
    if not constraints:
        return True
    rules = constraints.get("resourceRules") or []
    if rules and not any(rule_matches(r, resource, operation) for r in rules):
        return False
    if any(rule_matches(r, resource, operation) for r in constraints.get("excludeResourceRules") or []):
        return False
    labels = (resource.get("metadata") or {}).get("labels") or {}
    if constraints.get("objectSelector") and not label_selector_matches(
        constraints["objectSelector"], labels
    ):
        return False
    ns_selector = constraints.get("namespaceSelector")
    if ns_selector and (ns_selector.get("matchLabels") or ns_selector.get("matchExpressions")):
        ns_labels = labels if resource.get("kind") == "Namespace" else namespace_labels
        if not label_selector_matches(ns_selector, ns_labels):
            return False
    return True


def matches_pods_only(constraints: dict[str, Any] | None) -> bool:
    rules = (constraints or {}).get("resourceRules") or []
    return bool(rules) and all(set(r.get("resources") or []) <= {"pods"} for r in rules)


# ------------------------------------------------------------------ the policy kinds
def request_of(adm: Any) -> dict[str, Any]:
    resource = adm.resource
    meta = resource.get("metadata") or {}
    group, _, version = str(resource.get("apiVersion", "")).rpartition("/")
    return {
        "operation": adm.operation,
        "namespace": namespace_of(resource),
        "name": meta.get("name", ""),
        "userInfo": adm.user_info,
        "kind": {"group": group, "version": version, "kind": resource.get("kind", "")},
        "resource": {"group": group, "version": version, "resource": plural(str(resource.get("kind", "")))},
    }


_NOT_BUILTIN_CLUSTER_SCOPED = {
    "ClusterPolicy", "ClusterPolicyReport", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingPolicy", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService",
}  # fmt: skip


@lru_cache(maxsize=1)
def _builtin_kinds() -> dict[str, Any]:
    """The twin API server's own resource table, by kind (plural names, namespaced or not)."""
    from ....k8s.kinds import BUILTIN

    return {r.kind: r for r in BUILTIN}


def namespace_of(resource: dict[str, Any]) -> str:
    """The resource's namespace; a namespaced object without one is in ``default``."""
    kind = str(resource.get("kind", ""))
    info = _builtin_kinds().get(kind)
    namespaced = info.namespaced if info is not None else kind not in _NOT_BUILTIN_CLUSTER_SCOPED
    if not namespaced or not resource:
        return ""
    return str((resource.get("metadata") or {}).get("namespace") or "default")


def namespace_object(adm: Any) -> dict[str, Any] | None:
    ns = namespace_of(adm.resource)
    if not ns:
        return None
    return adm.namespace_object or {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": ns, "labels": adm.namespace_labels},
    }


def cel_rule(cel: dict[str, Any], adm: Any, template: tuple[str, ...] | None) -> tuple[str, str]:
    """A ClusterPolicy rule's ``validate.cel`` (``expressions``, ``variables``)."""
    act, context = cached_activation(adm, template)
    return run_validations(cel, act, "expressions", context)


def validating_policy(
    policy: dict[str, Any], adm: Any, bindings: list[dict[str, Any]]
) -> tuple[str, str] | None:
    """One ValidatingPolicy or ValidatingAdmissionPolicy on one request: ``(status, message)``,
    or None when the policy does not select the request."""
    spec = policy.get("spec") or {}
    constraints = spec.get("matchConstraints")
    resource = adm.resource
    obj, old = adm.obj, adm.old
    if not constraints_match(constraints, resource, adm.operation, adm.namespace_labels):
        template = POD_CONTROLLERS.get(str(resource.get("kind", "")))
        if policy.get("kind") != "ValidatingPolicy" or template is None or not matches_pods_only(constraints):
            return None
        if not constraints_match(
            _as_pods(constraints), _pod_like(resource), adm.operation, adm.namespace_labels
        ):
            return None
        obj, old = pod_view(obj, template), pod_view(old, template)
    if policy.get("kind") == "ValidatingAdmissionPolicy":
        mine = [
            b
            for b in bindings
            if (b.get("spec") or {}).get("policyName") == (policy.get("metadata") or {}).get("name")
        ]
        if bindings and not mine:
            return None
        for b in mine:
            if not constraints_match(
                (b.get("spec") or {}).get("matchResources"), resource, adm.operation, adm.namespace_labels
            ):
                return "skip", "the binding does not select the request"
    act = activation(obj, old, request_of(adm), namespace_object(adm), adm.params)
    exempt = _cel_exception(policy, adm.exceptions, act)
    if exempt:
        return "skip", f"rule is skipped due to policy exception {exempt}"
    return run_validations(spec, act)


def _cel_exception(
    policy: dict[str, Any], exceptions: list[dict[str, Any]], act: dict[str, Any]
) -> str | None:
    """A CEL PolicyException (``policies.kyverno.io``) naming this policy whose matchConditions
    all hold for the request."""
    name = (policy.get("metadata") or {}).get("name")
    for exc in exceptions:
        if not str(exc.get("apiVersion", "")).startswith("policies.kyverno.io/"):
            continue
        spec = exc.get("spec") or {}
        refs = spec.get("policyRefs") or []
        if not any(
            r.get("name") == name and r.get("kind", policy.get("kind")) == policy.get("kind") for r in refs
        ):
            continue
        try:
            if all(
                _true(evaluate(str(c.get("expression", "")), act)) for c in spec.get("matchConditions") or []
            ):
                return str((exc.get("metadata") or {}).get("name", ""))
        except CelError:
            continue
    return None


def _as_pods(constraints: dict[str, Any] | None) -> dict[str, Any]:
    c = dict(constraints or {})
    c["resourceRules"] = [
        {**r, "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods"]}
        for r in c.get("resourceRules") or []
    ]
    return c


def _pod_like(resource: dict[str, Any]) -> dict[str, Any]:
    return {**resource, "apiVersion": "v1", "kind": "Pod"}
