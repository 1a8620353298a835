"""Score a set of Kyverno policies on a CISO scenario by executing them, as the benchmark will score
an agent's: deploy them on the violating environment and read the reports (the paper's pass), then on
the compliant variant (compliance validation). A policy Kyverno refuses scores zero with its reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...twin.kube.errors import ApiError
from .environment import bring_up, deploy_policies, reports
from .posture import Posture, assess
from .spec import CisoScenario


@dataclass(frozen=True)
class PolicyScore:
    detected: bool
    """The paper's pass: a report scoped to an injected workload fails."""
    compliant_clean: bool
    """Compliance validation: on the compliant variant the workload is reported and nothing fails."""
    violating: Posture | None = None
    compliant: Posture | None = None
    refused: str = ""
    """Kyverno's refusal of a policy, when it refused one."""

    @property
    def strict(self) -> bool:
        """Both: the stricter column (issue 28)."""
        return self.detected and self.compliant_clean


def score_policies(scenario: CisoScenario, policies: list[dict[str, Any]], *, seed: int = 0) -> PolicyScore:
    twin = bring_up(scenario, "violating", seed=seed)
    try:
        deploy_policies(twin, policies)
    except ApiError as e:
        return PolicyScore(False, False, refused=e.message)
    violating = assess(reports(twin), scenario.targets())
    other = bring_up(scenario, "compliant", seed=seed)
    deploy_policies(other, policies)
    compliant = assess(reports(other), scenario.targets())
    return PolicyScore(
        detected=violating.detected,
        compliant_clean=compliant.evidence and not compliant.detected,
        violating=violating,
        compliant=compliant,
    )
