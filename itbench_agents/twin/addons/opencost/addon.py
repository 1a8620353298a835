"""OpenCost in the twin (``twin.install_addon("opencost")``, ``itbench twin serve --addon opencost``):
its API served beside the twin's others (``Endpoints.opencost_url``) and its cost metrics in the
twin's Prometheus, both computed by ``costmodel.py`` from the twin's history and a custom pricing
model, and its cost alerts among the twin's alert rules.

Nothing is created in the cluster: the cost-model Deployment of OpenCost's Helm chart would add a
pod whose own cost and usage change every figure of the app it is there to measure.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .costmodel import CostModel
from .metrics import OpenCostFamily
from .pricing import CustomPricing
from .server import make_opencost_handler

if TYPE_CHECKING:
    from ...core import TwinCore as Twin


class OpenCostAddon:
    name = "opencost"
    endpoint_field = "opencost_url"

    def __init__(self, pricing: CustomPricing | None = None, rule_files: bool = True) -> None:
        self.pricing = pricing or CustomPricing()
        self.model: CostModel | None = None
        self.with_rule_files = rule_files
        """False: the cost alerts are not loaded as files; whoever installs the addon delivers them
        otherwise (a FinOps episode: as a PrometheusRule the app's team owns, ``personas/finops/alerts.py``)."""

    def install(self, twin: Twin) -> None:
        self.model = CostModel(twin, self.pricing)
        metrics = getattr(twin, "metrics", None)
        if metrics is not None and hasattr(metrics, "families"):  # installed after observability
            metrics.families.append(self.metric_family())

    def cost_model(self) -> CostModel:
        if self.model is None:
            raise RuntimeError("the OpenCost addon is not installed in a twin")
        return self.model

    def metric_family(self) -> OpenCostFamily:
        """The family the twin's Prometheus serves (``telemetry/hub.py`` asks installed addons)."""
        return OpenCostFamily(self.cost_model())

    def rule_files(self) -> list[Path]:
        """OpenCost's cost alerts (``scenarios/rules/addons/opencost.yaml``: CPUSpend, MemorySpend, StorageSpend),
        which ``prometheus/alerts.py`` loads beside the base rules when the addon is installed."""
        from ....paths import scenarios_dir

        if not self.with_rule_files:
            return []
        return [scenarios_dir() / "rules" / "addons" / "opencost.yaml"]

    def make_handler(self, twin: Twin) -> Any:
        return make_opencost_handler(self.cost_model())
