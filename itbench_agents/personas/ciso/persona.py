"""The CISO persona as the harness finds it (``harness/personas.py``): its library of compliance
tasks (``library.py``), how they are tagged and recorded, and their environment (``episode.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.persona import EnvironmentRequest
from .spec import CisoScenario


class CisoPersona:
    name = "ciso"
    description = (
        "compliance: Kyverno and OPA Rego policies, Ansible playbooks that assess hosts (paper Table 5)"
    )

    def library(self) -> Sequence[CisoScenario]:
        from .library import ciso_library

        return ciso_library()

    def tags(self, scenario: Any) -> set[str]:
        """Its tags, its class (``kyverno``, ``kyverno-update``, ``k8s-opa``, ``rhel-opa``) and its CIS ids."""
        return {*scenario.tags, scenario.task_class, *scenario.cis}

    def record_fields(self, scenario: Any) -> dict[str, Any]:
        return {"category": scenario.task_class, "bucket": scenario.complexity}

    def make_environment(self, request: EnvironmentRequest) -> Any:
        from .episode import CisoEnvironment

        # scored by its ``scores()`` (named scores), not by ``evaluate()``/``topology()``
        return CisoEnvironment(request.scenario, seed=request.seed, workdir=request.workdir)

    def twin_extension(self, scenario: Any) -> None:
        return None


PERSONA = CisoPersona()
