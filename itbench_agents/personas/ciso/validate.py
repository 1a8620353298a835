"""``itbench scenarios validate --suite ciso``: each CISO scenario proven on the twin — its reference
policy is one Kyverno accepts, detects the violation on the violating workload, reports no failure
on the compliant one, and without any policy nothing is detected (a noop agent scores zero)."""

from __future__ import annotations

from ...scenario.validate import Check, ValidationResult
from .environment import bring_up, reports
from .posture import assess
from .score import score_policies
from .spec import CisoScenario


def validate_ciso(scenario: CisoScenario, seed: int = 0) -> ValidationResult:
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
