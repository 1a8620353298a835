"""A PrometheusRule's ``spec.groups`` as Prometheus rule groups, and the errors of the operator's
validating webhook (``prometheusrulevalidate.monitoring.coreos.com``: 422, "Rules are not valid",
one cause per problem).

Fields of a rule group the twin accepts and ignores: ``limit``, ``partial_response_strategy``,
``query_offset``. Recording rules (``record:``) are valid and kept in the object, but the twin's
Prometheus evaluates alerting rules only: they are left out of the loaded groups.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ...prometheus.alerts import RuleGroup

IGNORED_GROUP_FIELDS = ("limit", "partial_response_strategy", "query_offset")


def rule_groups(spec: Any) -> tuple[list[RuleGroup], list[str]]:
    """The alerting groups of a PrometheusRule spec and the problems that make it invalid."""
    if not isinstance(spec, dict):
        return [], ["spec: must be an object"]
    groups = spec.get("groups") or []
    if not isinstance(groups, list):
        return [], ["spec.groups: must be a list"]
    out: list[RuleGroup] = []
    problems: list[str] = []
    names: set[str] = set()
    for i, g in enumerate(groups):
        where = f"spec.groups[{i}]"
        if not isinstance(g, dict):
            problems.append(f"{where}: must be an object")
            continue
        name = str(g.get("name") or "")
        if not name:
            problems.append(f"{where}: groupname must not be empty")
        elif name in names:
            problems.append(f'{where}: groupname: "{name}" is repeated in the same file')
        names.add(name)
        raw = {k: v for k, v in g.items() if k not in IGNORED_GROUP_FIELDS}
        rules = raw.get("rules") or []
        if not isinstance(rules, list):
            problems.append(f"{where}.rules: must be a list")
            continue
        alerting = []
        for j, r in enumerate(rules):
            if not isinstance(r, dict):
                problems.append(f"{where}.rules[{j}]: must be an object")
            elif "record" in r and "alert" in r:
                problems.append(
                    f"group \"{name}\", rule {j + 1}: only one of 'record' and 'alert' must be set"
                )
            elif "record" in r:
                continue
            elif "alert" not in r:
                problems.append(f"group \"{name}\", rule {j + 1}: one of 'record' or 'alert' must be set")
            else:
                alerting.append(r)
        try:
            out.append(RuleGroup.model_validate({**raw, "rules": alerting}))
        except ValidationError as e:
            for err in e.errors():
                loc = ".".join(str(x) for x in err["loc"])
                problems.append(f'group "{name}": {loc}: {err["msg"]}')
    return out, problems
