"""Run ``kyverno test``-format cases (``kyverno-test.yaml``: policies, resources, values, expected
results) through this engine, outcome by outcome, as the Kyverno CLI checks them.

Each expected ``(policy, rule, resource, result)`` is one outcome. Stricter than the CLI in one
way: a result the engine produced nothing for (the rule did not select the resource) counts as
``skip``, not as a pass whatever was expected. Policies of kinds this engine does not evaluate
(ValidatingPolicy, ValidatingAdmissionPolicy...) make their outcomes failures marked
``unsupported``; nothing is left out of the denominator.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from .celrules import namespace_of, validating_policy
from .engine import Admission, RuleResult, apply_policy

KYVERNO_KINDS = ("ClusterPolicy", "Policy")
CEL_KINDS = ("ValidatingPolicy", "ValidatingAdmissionPolicy")


@dataclass(frozen=True)
class Outcome:
    test: str
    policy: str
    rule: str
    resource: str
    expected: str
    got: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.expected == self.got


@dataclass
class TestReport:
    file: str
    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> int:
        return sum(o.ok for o in self.outcomes)

    @property
    def failed(self) -> int:
        return len(self.outcomes) - self.passed


def find_test_files(root: Path) -> list[Path]:
    """Every ``kyverno-test.yaml`` under ``root``, dot-folders (``.kyverno-test/``) included."""
    found = []
    for folder, _dirs, files in os.walk(root):
        if "kyverno-test.yaml" in files:
            found.append(Path(folder) / "kyverno-test.yaml")
    return sorted(found)


def _docs(path: Path) -> list[dict[str, Any]]:
    with path.open() as fh:
        docs = [d for d in yaml.safe_load_all(fh) if isinstance(d, dict)]
    out: list[dict[str, Any]] = []
    for d in docs:
        if d.get("kind") == "List" and isinstance(d.get("items"), list):
            out.extend(i for i in d["items"] if isinstance(i, dict))
        else:
            out.append(d)
    return out


def run_file(path: Path, root: Path | None = None) -> list[TestReport]:
    """The reports of every Test document in one ``kyverno-test.yaml``."""
    folder = path.parent.parent if path.parent.name == ".kyverno-test" else path.parent
    label = str(folder.relative_to(root)) if root else str(folder)
    try:
        tests = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError) as exc:
        return [TestReport(label, "?", error=f"cannot read {path}: {exc}")]
    return [run_test(t, path.parent, label) for t in tests]


def run_test(test: dict[str, Any], base: Path, label: str) -> TestReport:
    name = str((test.get("metadata") or {}).get("name") or test.get("name") or label)
    report = TestReport(label, name)
    try:
        policies = [d for p in test.get("policies") or [] for d in _docs(base / p)]
        resources = [d for r in test.get("resources") or [] for d in _docs(base / r)]
        resources += [d for r in test.get("jsonPayloads") or [] for d in _docs(base / r)]
        values = _values(test, base)
        user = _docs(base / test["userinfo"])[0] if test.get("userinfo") else {}
        exceptions = [d for e in test.get("exceptions") or [] for d in _docs(base / e)]
    except (OSError, yaml.YAMLError, IndexError, KeyError) as exc:
        report.error = f"cannot load the test's files: {exc}"
        for r in test.get("results") or []:
            for res in r.get("resources") or []:
                report.outcomes.append(
                    Outcome(
                        name,
                        str(r.get("policy")),
                        str(r.get("rule", "")),
                        res,
                        str(r.get("result")),
                        "error",
                        str(exc),
                    )
                )
        return report
    bindings = [p for p in policies if p.get("kind") == "ValidatingAdmissionPolicyBinding"]
    by_name = {
        str((p.get("metadata") or {}).get("name")): p
        for p in policies
        if p.get("kind") != "ValidatingAdmissionPolicyBinding"
    }
    cache: dict[tuple[str, int, str], list[RuleResult]] = {}
    for entry in test.get("results") or []:
        policy_name = str(entry.get("policy", "")).split("/")[-1]
        rule = str(entry.get("rule", ""))
        expected = str(entry.get("result", ""))
        operation = entry.get("operation")
        names = list(entry.get("resources") or []) + ([entry["resource"]] if entry.get("resource") else [])
        names = names or [""]  # a JSON-payload test: one outcome per entry
        for res_name in names:
            base_outcome = Outcome(name, policy_name, rule, res_name, expected, "")
            out = partial(_record, report, base_outcome)
            policy = by_name.get(policy_name)
            if policy is None:
                out("missing", f"policy {policy_name} not found")
                continue
            if policy.get("kind") not in KYVERNO_KINDS + CEL_KINDS:
                out("unsupported", f"{policy.get('kind')} policies are not evaluated by this engine")
                continue
            targets = [i for i, r in enumerate(resources) if not res_name or _named(r, res_name)]
            if not targets:
                out("missing", f"resource {res_name} not found")
                continue
            statuses = []
            for i in targets:
                key = (policy_name, i, str(operation or ""))
                if key not in cache:
                    adm = _admission(resources[i], policy_name, values, user, operation)
                    adm.exceptions = exceptions
                    if policy.get("kind") in CEL_KINDS:
                        got_one = validating_policy(policy, adm, bindings)
                        cache[key] = [RuleResult(policy_name, "", *got_one)] if got_one else []
                    else:
                        cache[key] = apply_policy(policy, adm)
                hits = [
                    r
                    for r in cache[key]
                    if not r.rule  # ruleless kinds: every result of the policy
                    or not rule
                    or r.rule in (rule, f"autogen-{rule}", f"autogen-cronjob-{rule}")
                ]
                statuses.extend(hits)
            if not statuses:
                out("skip", "no rule result: the rule does not select the resource")
                continue
            got = {s.status for s in statuses}
            status = expected if got == {expected} else sorted(got - {expected})[0]
            out(status, "; ".join(s.message for s in statuses)[:300])
    return report


def _record(report: TestReport, base: Outcome, got: str, detail: str = "") -> None:
    report.outcomes.append(replace(base, got=got, detail=detail))


def _named(resource: dict[str, Any], name: str) -> bool:
    """``name`` or ``namespace/name`` names the resource (the kind is not compared, as upstream)."""
    meta = resource.get("metadata") or {}
    ns, _, bare = name.rpartition("/")
    return meta.get("name") == bare and (not ns or meta.get("namespace", "") == ns)


def _values(test: dict[str, Any], base: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if test.get("variables"):
        docs = _docs(base / test["variables"])
        values = docs[0] if docs else {}
    if isinstance(test.get("values"), dict):
        values = {**values, **test["values"]}
    return values


def _admission(
    resource: dict[str, Any], policy: str, values: dict[str, Any], user: dict[str, Any], operation: Any
) -> Admission:
    meta = resource.get("metadata") or {}
    variables: dict[str, Any] = dict(values.get("globalValues") or {})
    rule_values: dict[str, dict[str, Any]] = {}
    foreach_values: dict[str, dict[str, list[Any]]] = {}
    for p in values.get("policies") or []:
        if p.get("name") != policy:
            continue
        for r in p.get("rules") or []:
            rule_values[str(r.get("name"))] = dict(r.get("values") or {})
            foreach_values[str(r.get("name"))] = dict(r.get("foreachValues") or {})
        for res in p.get("resources") or []:
            if res.get("name") == meta.get("name"):
                variables.update(res.get("values") or {})
    op = str(operation or variables.pop("request.operation", "CREATE"))
    variables.pop("request.operation", None)
    ns = namespace_of(resource)
    labels: dict[str, str] = {}
    for entry in values.get("namespaceSelector") or []:
        if entry.get("name") == ns:
            labels = dict(entry.get("labels") or {})
    namespace_object = None
    for nso in values.get("namespaces") or []:
        if (nso.get("metadata") or {}).get("name") == ns:
            labels = dict((nso.get("metadata") or {}).get("labels") or {})
            namespace_object = nso
    old = variables.pop("request.oldObject", None)
    obj: dict[str, Any] | None = resource
    if op == "DELETE":
        obj, old = None, resource
    elif op == "UPDATE" and old is None:
        old = resource
    return Admission(
        obj=obj,
        operation=op,
        old=old,
        namespace_labels=labels,
        user_info=dict(user.get("userInfo") or {}),
        roles=list(user.get("roles") or []),
        cluster_roles=list(user.get("clusterRoles") or []),
        variables=variables,
        rule_values=rule_values,
        foreach_values=foreach_values,
        namespace_object=namespace_object,
    )


def run_dir(root: Path) -> list[TestReport]:
    return [rep for f in find_test_files(root) for rep in run_file(f, root)]
