"""The SRE persona as the harness finds it (``harness/personas.py``): every SRE scenario is a twin
scenario file (``scenarios/sre/``, read by ``scenario/registry.py``) and runs in the twin
environment, so it has no library of its own; what it adds to the twin is its goal
(``twin_extension.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.persona import EnvironmentRequest, PersonaScenario
from .twin_extension import SreTwinExtension


class SrePersona:
    name = "sre"
    description = "incident diagnosis and mitigation on Kubernetes microservices (paper Table 4)"

    def library(self) -> Sequence[PersonaScenario]:
        return []

    def tags(self, scenario: Any) -> set[str]:
        return set(scenario.tags)

    def record_fields(self, scenario: Any) -> dict[str, Any]:
        raise TypeError(f"the SRE persona has no library scenario: {scenario.id}")

    def make_environment(self, request: EnvironmentRequest) -> Any:
        raise TypeError(f"the SRE persona has no library scenario: {request.scenario.id}")

    def twin_extension(self, scenario: Any) -> SreTwinExtension:
        return SreTwinExtension()


PERSONA = SrePersona()
