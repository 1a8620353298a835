"""OpenCost's custom pricing model (the ``default.json`` / Helm ``customPricing`` of a cluster without
a cloud bill), as a scenario configures it.

Rates are OpenCost's: ``CPU`` per core-hour, ``RAM`` per GiB-hour, ``GPU`` per GPU-hour, ``storage``
per GiB-hour of a persistent volume; ``spotCPU`` / ``spotRAM`` for preemptible nodes; network egress
per GiB (negligible by default, as in the paper's set-up). OpenCost writes the values as strings
(``"CPU": "0.031611"``); numbers are accepted too. Per node pool overrides are this twin's addition:
``nodePools`` maps a value of the node label ``nodePoolLabel`` to rates that replace the defaults for
nodes of that pool (an expensive GPU or high-memory pool beside the general one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Rate = float


def _rate(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError("a rate is a number or a numeric string, not a boolean")
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            raise ValueError(f"rate {v!r} is not a number") from None
    if not isinstance(v, (int, float)):
        raise ValueError(f"a rate is a number or a numeric string, not {type(v).__name__}")
    f = float(v)
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError("a rate must be finite")
    if f < 0:
        raise ValueError(f"a rate cannot be negative (got {f})")
    return f


class PoolRates(BaseModel):
    """Rates of one node pool; an unset rate falls back to the cluster's."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    CPU: Rate | None = None
    RAM: Rate | None = None
    GPU: Rate | None = None
    spot: bool = False
    """Nodes of this pool are preemptible: they are priced at ``spotCPU`` / ``spotRAM``."""

    @field_validator("CPU", "RAM", "GPU", mode="before")
    @classmethod
    def _check(cls, v: Any) -> Any:
        return None if v is None else _rate(v)


class CustomPricing(BaseModel):
    """OpenCost's custom pricing; defaults are OpenCost's own ``default.json``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    provider: str = "custom"
    description: str = "itbench twin custom pricing"
    CPU: Rate = 0.031611
    RAM: Rate = 0.004237
    GPU: Rate = 0.95
    storage: Rate = 0.00005479452
    spotCPU: Rate = 0.006655
    spotRAM: Rate = 0.000892
    zoneNetworkEgress: Rate = 0.0
    regionNetworkEgress: Rate = 0.0
    internetNetworkEgress: Rate = 0.0
    nodePoolLabel: str = "node.kubernetes.io/instance-type"
    nodePools: dict[str, PoolRates] = Field(default_factory=dict)

    @field_validator(
        "CPU",
        "RAM",
        "GPU",
        "storage",
        "spotCPU",
        "spotRAM",
        "zoneNetworkEgress",
        "regionNetworkEgress",
        "internetNetworkEgress",
        mode="before",
    )
    @classmethod
    def _check(cls, v: Any) -> Any:
        return _rate(v)

    def rates_for(self, labels: dict[str, str]) -> NodeRates:
        """The hourly rates of a node with these labels."""
        pool = self.nodePools.get(labels.get(self.nodePoolLabel, ""))
        spot = bool(pool and pool.spot)
        cpu = self.spotCPU if spot else self.CPU
        ram = self.spotRAM if spot else self.RAM
        gpu = self.GPU
        if pool is not None:
            cpu = pool.CPU if pool.CPU is not None else cpu
            ram = pool.RAM if pool.RAM is not None else ram
            gpu = pool.GPU if pool.GPU is not None else gpu
        return NodeRates(cpu=cpu, ram_gib=ram, gpu=gpu, spot=spot)


class NodeRates(BaseModel):
    """Hourly rates that price one node: per core, per GiB of RAM, per GPU."""

    model_config = ConfigDict(frozen=True)

    cpu: float
    ram_gib: float
    gpu: float
    spot: bool = False


class PricingError(ValueError):
    """A pricing file that cannot be used, with the file and the fields at fault."""


def load_pricing(path: str | Path) -> CustomPricing:
    """Read a pricing file (JSON as OpenCost writes it, or YAML); ``PricingError`` names the file and
    every field at fault."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise PricingError(f"{p}: cannot read pricing file: {e.strerror or e}") from None
    try:
        raw = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise PricingError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}") from None
    return pricing_from(raw, source=str(p))


REQUIRED_RATES = ("CPU", "RAM", "storage")
"""Rates a pricing file must state: a model that leaves them out prices nothing it means to."""


def pricing_from(
    raw: Any, source: str = "pricing", required: tuple[str, ...] = REQUIRED_RATES
) -> CustomPricing:
    """Validate a pricing mapping; ``PricingError`` lists ``source: field: message`` per problem
    (a rate in ``required`` that is absent is one)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise PricingError(f"{source}: a pricing model is a mapping of rates, not {type(raw).__name__}")
    lines = [f"{source}: {k}: missing rate (required)" for k in required if k not in raw]
    try:
        pricing = CustomPricing.model_validate(raw)
    except ValidationError as e:
        for err in e.errors():
            where = ".".join(str(x) for x in err["loc"]) or "(root)"
            msg = str(err["msg"]).removeprefix("Value error, ")
            lines.append(f"{source}: {where}: {msg}")
        raise PricingError("\n".join(lines)) from None
    if lines:
        raise PricingError("\n".join(lines))
    return pricing
