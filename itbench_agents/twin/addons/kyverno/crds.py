"""The CustomResourceDefinitions Kyverno's Helm chart installs that the twin serves: policies and
exceptions (``kyverno.io``) and the policy reports (``wgpolicyk8s.io/v1alpha2``), with the real
names, short names, categories and printer columns (``config/crds`` of kyverno/kyverno 1.13).

The schemas keep what the API server itself checks (types, enums, defaults such as
``spec.background: true``) and leave the rest to Kyverno's policy webhook (``policy_checks.py``),
as the real ones do with ``x-kubernetes-preserve-unknown-fields`` inside rules.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

KYVERNO = "kyverno.io"
REPORTS = "wgpolicyk8s.io"
REPORTS_VERSION = "v1alpha2"

_OPEN: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_ACTIONS = ["audit", "enforce", "Audit", "Enforce"]


def _object(required: list[str] | None = None, **properties: Obj) -> Obj:
    """A custom resource's schema: apiVersion, kind, metadata and ``properties``."""
    schema: Obj = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            **properties,
        },
    }
    if required:
        schema["required"] = required
    return schema


def _policy_schema() -> Obj:
    rule = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "name": {"type": "string", "maxLength": 63},
            "validate": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"failureAction": {"type": "string", "enum": ["Audit", "Enforce"]}},
            },
        },
    }
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "admission": {"type": "boolean", "default": True},
            "background": {"type": "boolean", "default": True},
            "emitWarning": {"type": "boolean", "default": False},
            "applyRules": {"type": "string", "enum": ["All", "One"]},
            "failurePolicy": {"type": "string", "enum": ["Ignore", "Fail"]},
            "validationFailureAction": {"type": "string", "enum": _ACTIONS, "default": "Audit"},
            "webhookTimeoutSeconds": {"type": "integer", "format": "int32"},
            "rules": {"type": "array", "items": rule},
        },
    }
    return _object(required=["spec"], spec=spec, status=_OPEN)


def _policy_columns() -> list[Obj]:
    ready = '.status.conditions[?(@.type == "Ready")]'
    return [
        {"jsonPath": ".spec.admission", "name": "ADMISSION", "type": "boolean"},
        {"jsonPath": ".spec.background", "name": "BACKGROUND", "type": "boolean"},
        {"jsonPath": f"{ready}.status", "name": "READY", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "AGE", "type": "date"},
        {"jsonPath": ".spec.failurePolicy", "name": "FAILURE POLICY", "type": "string", "priority": 1},
        {"jsonPath": ".status.rulecount.validate", "name": "VALIDATE", "type": "integer", "priority": 1},
        {"jsonPath": ".status.rulecount.mutate", "name": "MUTATE", "type": "integer", "priority": 1},
        {"jsonPath": ".status.rulecount.generate", "name": "GENERATE", "type": "integer", "priority": 1},
        {
            "jsonPath": ".status.rulecount.verifyimages",
            "name": "VERIFY IMAGES",
            "type": "integer",
            "priority": 1,
        },
        {"jsonPath": f"{ready}.message", "name": "MESSAGE", "type": "string"},
    ]


def _report_columns() -> list[Obj]:
    return [
        {"jsonPath": ".scope.kind", "name": "Kind", "type": "string"},
        {"jsonPath": ".scope.name", "name": "Name", "type": "string"},
        *(
            {"jsonPath": f".summary.{k}", "name": k.capitalize(), "type": "integer"}
            for k in ("pass", "fail", "warn", "error", "skip")
        ),
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ]


def _report_schema() -> Obj:
    counts = {k: {"type": "integer"} for k in ("pass", "fail", "warn", "error", "skip")}
    result = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "result": {"type": "string", "enum": ["pass", "fail", "warn", "error", "skip"]},
            "policy": {"type": "string"},
        },
        "required": ["policy"],
    }
    return _object(
        scope=_OPEN,
        scopeSelector=_OPEN,
        summary={"type": "object", "properties": counts},
        results={"type": "array", "items": result},
    )


def _crd(
    group: str,
    kind: str,
    plural: str,
    scope: str,
    versions: list[tuple[str, bool]],
    schema: Obj,
    columns: list[Obj],
    short: list[str],
    categories: list[str],
    status: bool,
) -> Obj:
    names: Obj = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    if short:
        names["shortNames"] = short
    if categories:
        names["categories"] = categories
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {"app.kubernetes.io/part-of": "kyverno", "app.kubernetes.io/instance": "kyverno"},
        },
        "spec": {
            "group": group,
            "names": names,
            "scope": scope,
            "versions": [
                {
                    "name": name,
                    "served": True,
                    "storage": storage,
                    "schema": {"openAPIV3Schema": schema},
                    **({"subresources": {"status": {}}} if status else {}),
                    "additionalPrinterColumns": columns,
                }
                for name, storage in versions
            ],
        },
    }


def kyverno_crds() -> list[Obj]:
    policy = _policy_schema()
    exception = _object(required=["spec"], spec=_OPEN)
    age = [{"jsonPath": ".metadata.creationTimestamp", "name": "AGE", "type": "date"}]
    return [
        _crd(
            KYVERNO,
            "ClusterPolicy",
            "clusterpolicies",
            "Cluster",
            [("v1", True)],
            policy,
            _policy_columns(),
            ["cpol"],
            ["kyverno"],
            True,
        ),
        _crd(
            KYVERNO,
            "Policy",
            "policies",
            "Namespaced",
            [("v1", True)],
            policy,
            _policy_columns(),
            ["pol"],
            ["kyverno"],
            True,
        ),
        _crd(
            KYVERNO,
            "PolicyException",
            "policyexceptions",
            "Namespaced",
            [("v2", True), ("v2beta1", False)],
            exception,
            age,
            ["polex"],
            ["kyverno"],
            False,
        ),
        _crd(
            REPORTS,
            "PolicyReport",
            "policyreports",
            "Namespaced",
            [(REPORTS_VERSION, True)],
            _report_schema(),
            _report_columns(),
            ["polr"],
            [],
            False,
        ),
        _crd(
            REPORTS,
            "ClusterPolicyReport",
            "clusterpolicyreports",
            "Cluster",
            [(REPORTS_VERSION, True)],
            _report_schema(),
            _report_columns(),
            ["cpolr"],
            [],
            False,
        ),
    ]
