"""The FinOps library's price list (scenarios/finops/pricing/opencost.yaml)."""

from __future__ import annotations

from itbench_agents.personas.finops.pricing import library_pricing
from itbench_agents.twin.addons.opencost.pricing import CustomPricing


def test_the_general_nodes_are_priced_at_opencosts_defaults() -> None:
    p = library_pricing()
    rates = p.rates_for({"kubernetes.io/hostname": "twin-worker-0"})
    defaults = CustomPricing()
    assert (rates.cpu, rates.ram_gib) == (defaults.CPU, defaults.RAM)


def test_the_dedicated_pool_costs_four_times_as_much_per_core() -> None:
    p = library_pricing()
    pool = p.rates_for({"node.kubernetes.io/instance-type": "c7i.metal-24xl"})
    general = p.rates_for({})
    assert abs(pool.cpu / general.cpu - 4.0) < 0.01
    assert abs(pool.ram_gib / general.ram_gib - 4.0) < 0.01
