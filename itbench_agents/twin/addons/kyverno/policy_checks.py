"""What Kyverno's policy webhook (``validate-policy.kyverno.svc``) refuses in a ClusterPolicy or
Policy, with its messages (kyverno/kyverno ``pkg/validation/policy/validate.go``,
``api/kyverno/v1/spec_types.go``, ``rule_types.go``, ``pkg/policy/validate``), in the order Kyverno
checks: variables allowed in background mode, rule names, one operation per rule, kinds in every
match block, one validation element per validate rule, condition operators.

Not reproduced: Go's ``%#v`` dump of the rule in ``Invalid value`` errors is abbreviated to
``v1.Rule{Name:"…", …}``; checks of mutate, generate and verifyImages rules; JMESPath syntax; the
discovery check that each kind exists (an unknown kind matches nothing here, as it never would).
"""

from __future__ import annotations

import re
from typing import Any

Obj = dict[str, Any]

_VARIABLE = re.compile(r"\{\{[^{}]*\}\}")
_USER_VARIABLES = (
    "request.userInfo",
    "serviceAccountName",
    "serviceAccountNamespace",
    "request.roles",
    "request.clusterRoles",
)
OPERATORS = (
    "Equal", "Equals", "NotEqual", "NotEquals", "In", "AnyIn", "AllIn", "NotIn", "AnyNotIn", "AllNotIn",
    "GreaterThanOrEquals", "GreaterThan", "LessThanOrEquals", "LessThan",
    "DurationGreaterThanOrEquals", "DurationGreaterThan", "DurationLessThanOrEquals", "DurationLessThan",
)  # fmt: skip
_VALIDATION_ELEMENTS = ("pattern", "anyPattern", "deny", "foreach", "podSecurity", "cel", "assert")
_RULE_TYPES = ("mutate", "validate", "generate", "verifyImages")


def check_policy(policy: Obj) -> tuple[str | None, list[str]]:
    """(Kyverno's refusal or None, its warnings) for a ClusterPolicy or Policy."""
    raw = policy.get("spec")
    spec: Obj = raw if isinstance(raw, dict) else {}
    rules = [r if isinstance(r, dict) else {} for r in spec.get("rules") or []]
    warnings = _action_warnings(spec, rules)
    if spec.get("background", True) is not False:
        for text in _VARIABLE.findall(_flat(rules)):
            if any(v in text for v in _USER_VARIABLES):
                return (
                    "only select variables are allowed in background mode. Set spec.background=false to "
                    f"disable background mode for this policy rule: variable {text} is not allowed ",
                    warnings,
                )
    errs: list[str] = []
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        name = str(rule.get("name", ""))
        if name in seen:
            errs.append(
                f"spec.rules[{i}].name: Invalid value: {_go_rule(name)}: Duplicate rule name: '{name}'"
            )
        seen.add(name)
    for i, rule in enumerate(rules):
        name = str(rule.get("name", ""))
        count = sum(1 for t in _RULE_TYPES if rule.get(t))
        if count == 0:
            errs.append(
                f"spec.rules[{i}]: Invalid value: {_go_rule(name)}: No operation defined in the rule "
                f"'{name}'.(supported operations: mutate,validate,generate,verifyImages)"
            )
        elif count > 1:
            errs.append(
                f"spec.rules[{i}]: Invalid value: {_go_rule(name)}: Multiple operations defined in the rule "
                f"'{name}', only one operation (mutate,validate,generate,verifyImages) is allowed per rule"
            )
    if errs:
        return (errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"), warnings
    for i, rule in enumerate(rules):
        if not _every_block_has_kinds(rule.get("match")):
            return (
                "at least one element must be specified in a kind block, the kind attribute is mandatory "
                "when working with the resources element",
                warnings,
            )
        validate = rule.get("validate")
        if isinstance(validate, dict):
            problem = _check_validate(validate)
            if problem:
                where, message = problem
                return f"path: spec.rules[{i}].validate.{where}.: {message}", warnings
        for block in ("preconditions",):
            problem = _check_conditions(rule.get(block), block)
            if problem:
                where, message = problem
                return f"path: spec.rules[{i}].{where}.: {message}", warnings
    return None, warnings


def _action_warnings(spec: Obj, rules: list[Obj]) -> list[str]:
    actions = [spec.get("validationFailureAction")]
    actions += [
        o.get("action") for o in spec.get("validationFailureActionOverrides") or [] if isinstance(o, dict)
    ]
    actions += [
        (r.get("validate") or {}).get("failureAction") for r in rules if isinstance(r.get("validate"), dict)
    ]
    if any(a in ("enforce", "audit") for a in actions):
        return ["Validation failure actions enforce/audit are deprecated, use Enforce/Audit instead."]
    return []


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {_flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return " ".join(_flat(v) for v in value)
    return str(value)


def _go_rule(name: str) -> str:
    return f'v1.Rule{{Name:"{name}", …}}'


def _every_block_has_kinds(match: Any) -> bool:
    if not isinstance(match, dict):
        return False
    blocks = [f for key in ("any", "all") for f in match.get(key) or []]
    if blocks:
        return all(isinstance(f, dict) and ((f.get("resources") or {}).get("kinds")) for f in blocks)
    return bool((match.get("resources") or {}).get("kinds"))


def _check_validate(validate: Obj) -> tuple[str, str] | None:
    count = sum(1 for k in _VALIDATION_ELEMENTS if validate.get(k) is not None)
    if isinstance(validate.get("manifests"), dict) and (validate["manifests"].get("attestors") or []):
        count += 1
    if count == 0:
        return "", "one of pattern, anyPattern, deny, foreach, cel must be specified"
    if count > 1:
        return "", "only one of pattern, anyPattern, deny, foreach, cel can be specified"
    deny = validate.get("deny")
    if isinstance(deny, dict):
        return _check_conditions(deny.get("conditions"), "deny.conditions")
    for i, each in enumerate(validate.get("foreach") or []):
        if isinstance(each, dict) and not each.get("list"):
            return f"foreach[{i}]", "foreach.list is required"
    return None


def _check_conditions(block: Any, path: str) -> tuple[str, str] | None:
    if isinstance(block, list):
        groups: list[tuple[str, Any]] = [("", block)]
    elif isinstance(block, dict):
        groups = [(f".{k}", block.get(k)) for k in ("any", "all") if block.get(k) is not None]
    else:
        return None
    for suffix, conditions in groups:
        for j, cond in enumerate(conditions or []):
            op = cond.get("operator") if isinstance(cond, dict) else None
            if op not in OPERATORS:
                valid = " ".join(f'"{o}"' for o in OPERATORS)
                return (
                    f"{path}{suffix}[{j}]",
                    f"entered value of `operator` is invalid. valid values: [{valid}]",
                )
    return None
