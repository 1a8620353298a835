"""The paper's FinOps proximity metrics (ITBench §4, Table 6): how close the end state's cost and
efficiency are to the optimal ones, ``proximity = 1 − |observed − optimal| / optimal`` (floored at 0:
an end state twice as expensive as the optimum scores 0, not −1), for the namespace's hourly CPU
cost, hourly memory cost, CPU efficiency and memory efficiency.

Both sides are read from the twin's OpenCost (``twin/addons/opencost``) over one hour: the
*optimal* is the task's namespaces over the hour before the fault (the cost the app runs at when nothing is
wasted — blind to how the scenario breaks it), the *observed* the last hour of the settle period
after the agent's turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

HOUR = 3600.0


@dataclass(frozen=True)
class CostPoint:
    """A namespace's cost over a window: $ per hour of CPU and memory, and efficiencies."""

    cpu_cost_h: float
    ram_cost_h: float
    cpu_efficiency: float
    ram_efficiency: float

    def as_dict(self) -> dict[str, float]:
        return {
            "cpu_cost_h": self.cpu_cost_h,
            "ram_cost_h": self.ram_cost_h,
            "cpu_efficiency": self.cpu_efficiency,
            "ram_efficiency": self.ram_efficiency,
        }


def namespace_cost(model: Any, namespaces: Sequence[str], start: float, end: float) -> CostPoint:
    """The :class:`CostPoint` of ``namespaces`` together over ``[start, end)`` from an OpenCost
    ``CostModel`` (their allocations summed as OpenCost's ``Allocation.Add`` does)."""
    from ...twin.addons.opencost.allocation import aggregate, compute_sets
    from ...twin.addons.opencost.filters import parse_filter

    keep = parse_filter("namespace:" + ",".join(f'"{ns}"' for ns in namespaces))
    (st,) = compute_sets(model, np.asarray([start, end]), keep=keep)
    agg = aggregate(st, ["namespace"])
    found = [agg.allocations[ns] for ns in namespaces if ns in agg.allocations]
    hours = max(end - start, 1e-9) / HOUR
    if not found:
        return CostPoint(0.0, 0.0, 0.0, 0.0)
    a = found[0]
    for other in found[1:]:
        a.add(other)
    return CostPoint(
        a.get("cpuCost") / hours, a.get("ramCost") / hours, a.cpu_efficiency(), a.ram_efficiency()
    )


def proximity(observed: float, optimal: float) -> float:
    if optimal <= 0:
        return 1.0 if observed <= 0 else 0.0
    return max(0.0, 1.0 - abs(observed - optimal) / optimal)


METRICS = (
    ("proximity_cpu_cost", "cpu_cost_h", "hourly CPU cost"),
    ("proximity_ram_cost", "ram_cost_h", "hourly memory cost"),
    ("proximity_cpu_efficiency", "cpu_efficiency", "CPU efficiency"),
    ("proximity_ram_efficiency", "ram_efficiency", "memory efficiency"),
)


def proximity_scores(
    observed: CostPoint, optimal: CostPoint
) -> dict[str, tuple[float, str, dict[str, float]]]:
    """name → (value, explanation, metadata) for the four metrics."""
    o, p = observed.as_dict(), optimal.as_dict()
    out = {}
    for name, key, what in METRICS:
        v = proximity(o[key], p[key])
        out[name] = (
            v,
            f"{what}: {o[key]:.4g} observed, {p[key]:.4g} optimal",
            {"observed": o[key], "optimal": p[key]},
        )
    return out
