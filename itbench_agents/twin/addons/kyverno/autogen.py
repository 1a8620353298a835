"""Kyverno's auto-generated rules for Pod controllers: a rule written for Pods also checks the Pod
template of Deployments, DaemonSets, StatefulSets, Jobs, ReplicaSets and ReplicationControllers
(``autogen-<rule>``) and of CronJobs (``autogen-cronjob-<rule>``). The annotation
``pod-policies.kyverno.io/autogen-controllers`` (``none`` or a list) chooses the controllers."""

from __future__ import annotations

import copy
import json
from typing import Any

CONTROLLERS = ["DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController"]
ANNOTATION = "pod-policies.kyverno.io/autogen-controllers"


def controllers_of(policy: dict[str, Any]) -> list[str]:
    """The controllers the policy's Pod rules are generated for (empty: none)."""
    annotations = (policy.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(ANNOTATION)
    if raw is None:
        return [*CONTROLLERS, "CronJob"] if _can_autogen(policy) else []
    if raw.strip().lower() == "none":
        return []
    return [c.strip() for c in raw.split(",") if c.strip()]


def _filters(rule: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in (rule.get("match") or {}, rule.get("exclude") or {}):
        out.extend(block.get("any") or [])
        out.extend(block.get("all") or [])
        if block.get("resources"):
            out.append(block)
    return out


def _can_autogen(policy: dict[str, Any]) -> bool:
    """Kyverno generates rules only when every rule that matches Pods matches nothing else and
    does not select by name or labels (which a controller does not share with its Pods)."""
    for rule in (policy.get("spec") or {}).get("rules") or []:
        for f in _filters(rule):
            res = f.get("resources") or {}
            if res.get("names") or res.get("name") or res.get("selector") or res.get("annotations"):
                return False
            kinds = res.get("kinds") or []
            if "Pod" in kinds and len(kinds) > 1:
                return False
    return True


def _is_pod_rule(rule: dict[str, Any]) -> bool:
    kinds = [k for f in _filters(rule) for k in ((f.get("resources") or {}).get("kinds") or [])]
    match = rule.get("match") or {}
    match_kinds = [
        k
        for f in (match.get("any") or [])
        + (match.get("all") or [])
        + ([match] if match.get("resources") else [])
        for k in ((f.get("resources") or {}).get("kinds") or [])
    ]
    return bool(match_kinds) and all(k in ("Pod", "v1/Pod") for k in kinds) and "validate" in rule


def generate(policy: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``autogen-*`` rules Kyverno would add to ``policy``."""
    controllers = controllers_of(policy)
    if not controllers:
        return []
    out = []
    plain = [c for c in controllers if c != "CronJob"]
    for rule in (policy.get("spec") or {}).get("rules") or []:
        if not _is_pod_rule(rule):
            continue
        if plain:
            out.append(_rewrite(rule, f"autogen-{rule['name']}", plain, ("spec", "template")))
        if "CronJob" in controllers:
            out.append(
                _rewrite(
                    rule,
                    f"autogen-cronjob-{rule['name']}",
                    ["CronJob"],
                    ("spec", "jobTemplate", "spec", "template"),
                )
            )
    return out


def _rewrite(rule: dict[str, Any], name: str, kinds: list[str], template: tuple[str, ...]) -> dict[str, Any]:
    new = copy.deepcopy(rule)
    new["name"] = name
    new["_podTemplate"] = list(template)  # CEL rules are evaluated on the template's Pod view
    for key in ("match", "exclude"):
        block = new.get(key)
        if not block:
            continue
        for f in (
            (block.get("any") or []) + (block.get("all") or []) + ([block] if block.get("resources") else [])
        ):
            res = f.get("resources") or {}
            if res.get("kinds"):
                res["kinds"] = list(kinds)
    validate = new.get("validate") or {}
    for key in ("pattern",):
        if key in validate:
            validate[key] = _nest(validate[key], template)
    if "anyPattern" in validate:
        validate["anyPattern"] = [_nest(p, template) for p in validate["anyPattern"]]
    prefix = "request.object." + ".".join(template)
    # variables: request.object.spec → the template's spec, request.object.metadata → its metadata
    text = json.dumps({k: v for k, v in new.items() if k not in ("match", "exclude", "name", "_podTemplate")})
    text = text.replace("request.object.spec", prefix + ".spec").replace(
        "request.object.metadata", prefix + ".metadata"
    )
    new.update(json.loads(text))
    return new


def _nest(pattern: Any, template: tuple[str, ...]) -> Any:
    """A Pod pattern moved under the controller's Pod template (metadata and spec only)."""
    if not isinstance(pattern, dict):
        return pattern
    inner = {
        k: v
        for k, v in pattern.items()
        if k in ("metadata", "spec") or k.strip("=X^<+()") in ("metadata", "spec")
    }
    outer = {k: v for k, v in pattern.items() if k not in inner}
    node: dict[str, Any] = inner
    for key in reversed(template):
        node = {key: node}
    return {**outer, **node} if outer else node
