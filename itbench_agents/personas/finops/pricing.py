"""The price list of the FinOps scenarios on the twin (``scenarios/finops/pricing/opencost.yaml``): the
OpenCost custom pricing the harness gives the OpenCost addon of every FinOps episode."""

from __future__ import annotations

from ...paths import scenarios_dir
from ...twin.addons.opencost.pricing import CustomPricing, load_pricing


def library_pricing() -> CustomPricing:
    """The library's pricing; a broken file raises ``PricingError`` naming the file and fields."""
    return load_pricing(scenarios_dir() / "finops" / "pricing" / "opencost.yaml")
