"""The custom pricing model: OpenCost's defaults and value forms, and clear errors for files that
cannot price anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from itbench_agents.twin.addons.opencost.pricing import (
    CustomPricing,
    PricingError,
    load_pricing,
    pricing_from,
)


def test_defaults_are_opencosts_default_json() -> None:
    p = CustomPricing()
    assert (p.CPU, p.RAM, p.storage) == (0.031611, 0.004237, 0.00005479452)
    assert p.zoneNetworkEgress == p.regionNetworkEgress == p.internetNetworkEgress == 0.0


def test_rates_as_strings_as_opencost_writes_them(tmp_path: Path) -> None:
    f = tmp_path / "pricing.json"
    f.write_text('{"CPU": "0.05", "RAM": "0.01", "storage": "0.0001", "GPU": "2"}')
    p = load_pricing(f)
    assert (p.CPU, p.RAM, p.storage, p.GPU) == (0.05, 0.01, 0.0001, 2.0)


def test_node_pool_overrides_and_spot() -> None:
    p = pricing_from(
        {
            "CPU": 0.03,
            "RAM": 0.004,
            "storage": 0.0001,
            "spotCPU": 0.01,
            "spotRAM": 0.001,
            "nodePoolLabel": "pool",
            "nodePools": {"highmem": {"RAM": 0.02}, "spot": {"spot": True}},
        }
    )
    assert p.rates_for({}).cpu == 0.03
    hm = p.rates_for({"pool": "highmem"})
    assert (hm.cpu, hm.ram_gib) == (0.03, 0.02)
    sp = p.rates_for({"pool": "spot"})
    assert (sp.cpu, sp.ram_gib, sp.spot) == (0.01, 0.001, True)


def test_negative_missing_and_malformed_rates_name_file_and_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("CPU: -1\nRAM: lots\nnodePools:\n  big: {CPU: -0.5}\n")
    with pytest.raises(PricingError) as e:
        load_pricing(f)
    msg = str(e.value)
    assert f"{f}: storage: missing rate (required)" in msg
    assert f"{f}: CPU: a rate cannot be negative (got -1.0)" in msg
    assert f"{f}: RAM: rate 'lots' is not a number" in msg
    assert f"{f}: nodePools.big.CPU: a rate cannot be negative" in msg


def test_unknown_keys_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(PricingError, match="cpu: Extra inputs are not permitted"):
        pricing_from({"CPU": 1, "RAM": 1, "storage": 1, "cpu": 2})
    with pytest.raises(PricingError, match="cannot read pricing file"):
        load_pricing(tmp_path / "absent.json")
    (tmp_path / "x.json").write_text("{nope")
    with pytest.raises(PricingError, match="not valid JSON"):
        load_pricing(tmp_path / "x.json")
    with pytest.raises(PricingError, match="a pricing model is a mapping"):
        pricing_from([1, 2])
