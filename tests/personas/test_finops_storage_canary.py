"""The storage part of the FinOps canary (``personas/finops/alerts.py``): an unmounted volume that
brings the namespace's storage spend to CANARY_TARGET × last week's, charged as StorageSpend charges
it (each volume bound to one of the namespace's claims, mounted or not, while it exists)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from itbench_agents.personas.finops.alerts import (
    CANARY_SHARE,
    CANARY_TARGET,
    canary_volume,
    namespace_storage_cost,
    storage_canary_size,
)
from itbench_agents.twin.addons.opencost.costmodel import DiskAsset

RATE = 0.04 / 730  # $/GiB-hour
H = 3600.0


def test_the_canary_volume_brings_the_spend_to_the_target() -> None:
    week, last = 20 * RATE, 20 * RATE  # a 20Gi archive all along
    gib = storage_canary_size(last, week, RATE)
    assert (20 + gib) * RATE == pytest.approx(CANARY_TARGET * week, rel=0.05)
    # a namespace already spending more than the target still gets a share of what it spends
    assert storage_canary_size(320 * RATE, week, RATE) == pytest.approx(CANARY_SHARE * 320, abs=1)
    assert storage_canary_size(0.0, 0.0, RATE) == 1  # no storage at all: any volume is over 1.2 × 0
    pv, pvc = canary_volume("shop", gib)
    ref = pv["spec"]["claimRef"]
    assert (ref["namespace"], ref["name"]) == ("shop", pvc["metadata"]["name"])
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["capacity"]["storage"] == pvc["spec"]["resources"]["requests"]["storage"] == f"{gib}Gi"


@dataclass
class Model:
    disks_: list[DiskAsset]
    t: float

    def disks(self) -> list[DiskAsset]:
        return self.disks_

    def now(self) -> float:
        return self.t


def disk(name: str, ns: str, gib: float, start: float, end: float) -> DiskAsset:
    return DiskAsset(name, name, "standard", ns, name, gib * 2**30, RATE, [(start, end)])


def test_namespace_storage_cost_charges_bound_volumes_while_they_exist() -> None:
    model = Model(
        [
            disk("a", "shop", 100, 0, np.inf),
            disk("b", "shop", 50, 0, 0.5 * H),  # gone half way through the hour
            disk("c", "elsewhere", 999, 0, np.inf),
        ],
        t=2 * H,
    )
    assert namespace_storage_cost(model, "shop", 0, H) == pytest.approx((100 + 25) * RATE)
    assert namespace_storage_cost(model, "shop", H, 2 * H) == pytest.approx(100 * RATE)
    # not past now: the hour still running is charged for what has run of it
    assert namespace_storage_cost(model, "shop", 1.5 * H, 2.5 * H) == pytest.approx(50 * RATE)
