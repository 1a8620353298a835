"""The FinOps persona as the harness finds it (``harness/personas.py``): its library of billing
anomalies (``library.py``) with their environment (``episode.py``), and what its cost incidents —
twin scenario files under ``scenarios/finops/`` — add to the twin (``twin_extension.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.persona import EnvironmentRequest
from .anomaly_spec import AnomalyScenario


class FinopsPersona:
    name = "finops"
    description = (
        "cost: incidents on the twin with OpenCost, anomaly detection on billing data (paper Table 6)"
    )

    def library(self) -> Sequence[AnomalyScenario]:
        from .library import finops_library

        return finops_library()

    def tags(self, scenario: Any) -> set[str]:
        """Its tags and its class (``anomaly``)."""
        return {*scenario.tags, scenario.task_class}

    def record_fields(self, scenario: Any) -> dict[str, Any]:
        return {"category": scenario.task_class, "bucket": scenario.complexity}

    def make_environment(self, request: EnvironmentRequest) -> Any:
        from .episode import AnomalyEnvironment

        # billing data in the work folder, no cluster
        return AnomalyEnvironment(request.scenario, seed=request.seed, workdir=request.workdir)

    def twin_extension(self, scenario: Any) -> Any:
        from .twin_extension import FinopsTwinExtension

        return FinopsTwinExtension()


PERSONA = FinopsPersona()
