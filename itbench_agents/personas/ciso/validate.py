"""``itbench scenarios validate --suite ciso``: each CISO scenario proven on the twin — its reference
policy is one Kyverno accepts, detects the violation on the violating workload, reports no failure
on the compliant one, and without any policy nothing is detected (a noop agent scores zero). For
``k8s-opa``: the reference script collects JSON on both variants, the reference policy says false on
the violating one and true on the compliant one, and neither constant answer passes both; the same
for ``rhel-opa`` with the reference playbook run against the violating and the compliant host."""

from __future__ import annotations

from ...scenario.checks import Check, ValidationResult
from .environment import bring_up, reports
from .posture import assess
from .rego_score import score_rego
from .score import score_policies
from .spec import CisoScenario


def validate_ciso(scenario: CisoScenario, seed: int = 0) -> ValidationResult:
    if scenario.task_class == "k8s-opa":
        return validate_k8s_opa(scenario, seed)
    if scenario.task_class == "rhel-opa":
        return validate_rhel_opa(scenario)
    out = ValidationResult(scenario.id)
    nothing = assess(reports(bring_up(scenario, "violating", seed=seed)), scenario.targets())
    out.checks.append(
        Check("no policy, nothing detected (noop scores 0)", not nothing.detected, str(nothing.failing))
    )
    ref = score_policies(scenario, scenario.final_reference(), seed=seed)
    out.checks.append(Check("reference policy accepted by Kyverno", not ref.refused, ref.refused))
    if ref.refused:
        return out
    failing = ", ".join(ref.violating.failing) if ref.violating else ""
    out.checks.append(
        Check(
            "reference detects the violation",
            ref.detected,
            failing or "; ".join(ref.changed) or "no failing result",
        )
    )
    if scenario.task_class == "kyverno-update":
        kept = score_policies(scenario, list(scenario.existing), seed=seed)
        out.checks.append(
            Check(
                "the existing policies alone do not detect it",
                not kept.detected,
                ", ".join(kept.violating.failing) if kept.violating else "",
            )
        )
    detail = ""
    if ref.compliant is not None:
        detail = ", ".join(ref.compliant.failing) or (
            "" if ref.compliant.evidence else "no report on the workload"
        )
    out.checks.append(
        Check("reference reports the compliant workload and finds no failure", ref.compliant_clean, detail)
    )
    return out


def validate_k8s_opa(scenario: CisoScenario, seed: int = 0) -> ValidationResult:
    out = ValidationResult(scenario.id)
    ref = score_rego(scenario, scenario.fetcher, scenario.rego, seed=seed)
    v, c = ref.violating, ref.compliant
    out.checks.append(
        Check(
            "reference script collects JSON",
            ref.fetch_generates_data and bool(c and c.data_ok),
            v.why if v else "",
        )
    )
    out.checks.append(
        Check(
            "reference policy says false on the violating workload",
            ref.violation_detection,
            v.why if v else "",
        )
    )
    out.checks.append(
        Check(
            "reference policy says true on the compliant workload",
            ref.compliance_validation,
            c.why if c else "",
        )
    )
    for constant in ("false", "true"):
        rego = f"package check\nimport rego.v1\nresult := {constant}\n"
        blind = score_rego(scenario, scenario.fetcher, rego, seed=seed)
        out.checks.append(
            Check(f"a policy that always says {constant} does not pass both", not blind.strict, "")
        )
    return out


def validate_rhel_opa(scenario: CisoScenario) -> ValidationResult:
    """The reference playbook collects JSON from both hosts (run once per host), the reference policy
    says false on the violating one and true on the compliant one, and neither constant answer
    passes both."""
    from .host_score import collect_host
    from .rego_score import decide

    out = ValidationResult(scenario.id)
    assert scenario.playbook is not None and scenario.rego is not None
    collected = [collect_host(scenario, v, scenario.playbook) for v in ("violating", "compliant")]
    v, c = (decide(x, scenario.rego) for x in collected)
    out.checks.append(
        Check(
            "reference playbook collects JSON", v.data_ok and c.data_ok, "; ".join(x.why for x in collected)
        )
    )
    out.checks.append(Check("reference policy says false on the violating host", v.decision is False, v.why))
    out.checks.append(Check("reference policy says true on the compliant host", c.decision is True, c.why))
    for constant in ("false", "true"):
        rego = f"package check\nimport rego.v1\nresult := {constant}\n"
        bv, bc = (decide(x, rego) for x in collected)
        strict = bv.decision is False and bc.decision is True
        out.checks.append(Check(f"a policy that always says {constant} does not pass both", not strict, ""))
    return out
