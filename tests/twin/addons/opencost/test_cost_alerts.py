"""OpenCost's cost alerts (CPUSpend, MemorySpend: a namespace's hourly spend over the last hour more
than 20 % above the week before) evaluated on the twin's clock like the SRE alerts, on a twin with a
week of pre-history — which builds in seconds because node Leases are renewed sparsely and rules
are evaluated over the last hour only."""

from __future__ import annotations

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.instance import LOUD_PAST_S, Twin
from itbench_agents.twin.kube.store import clone

DEPLOYMENTS = GroupResource("apps", "deployments")
LEASES = GroupResource("coordination.k8s.io", "leases")
WEEK = 7 * 86400.0

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def week() -> Twin:
    return Twin.for_app("otel-demo", history_s=WEEK + 3600, addons=["opencost"])


def cost_alerts(twin: Twin) -> set[tuple[str, str]]:
    return {
        (a.name, a.labels.get("namespace", ""))
        for a in twin.alerts.firing(twin.now())
        if a.name.endswith("Spend")
    }


def scale(twin: Twin, name: str, replicas: int) -> None:
    d = clone(twin.store.get(DEPLOYMENTS, "otel-demo", name))
    d["spec"]["replicas"] = replicas
    d["metadata"].pop("resourceVersion")
    twin.store.update(DEPLOYMENTS, d)


def test_a_week_of_past_is_cheap_and_still_a_cluster(week: Twin) -> None:
    lease_versions = sum(1 for e in week.store.log if getattr(e, "gr", None) == LEASES)
    # every 10 min for a week, every 10 s for the last hour: ~3 × (1000 + 360), not 3 × 60,000
    assert 0 < lease_versions < 6000, lease_versions
    for lease in week.store.list(LEASES, "kube-node-lease"):
        from datetime import datetime

        renewed = datetime.fromisoformat(lease["spec"]["renewTime"].replace("Z", "+00:00")).timestamp()
        assert week.now() - renewed <= 15.0  # a kubelet's lease: fresh
    assert week.alerts is not None and week.alerts.start >= week.now() - LOUD_PAST_S - 15
    # the cost metrics cover the whole week all the same
    api = week.addons["opencost"].make_handler(week)
    from itbench_agents.twin.httpserver import Request

    r = api(
        Request(
            "GET",
            "/allocation/compute",
            {"window": ["7d"], "aggregate": ["namespace"], "accumulate": ["true"]},
            {},
        )
    )
    import json

    shop = json.loads(r.body)["data"][0]["otel-demo"]  # type: ignore[arg-type]
    assert shop["minutes"] > 6 * 24 * 60


def test_spend_alerts_fire_when_spend_grows_and_resolve_when_it_is_back(week: Twin) -> None:
    assert cost_alerts(week) == set()  # a steady week: nothing
    scale(week, "accounting", 4)  # +750m CPU requested at 250m each: the namespace's CPU spend triples
    week.advance(45 * 60)
    assert ("CPUSpend", "otel-demo") in cost_alerts(week)
    assert all(ns == "otel-demo" for _, ns in cost_alerts(week))
    scale(week, "accounting", 1)
    week.advance(90 * 60)  # the last hour's average is back under 1.2 × last week's
    assert cost_alerts(week) == set()


def test_cost_rules_come_with_the_addon_only() -> None:
    plain = Twin.for_app("otel-demo", history_s=600)
    assert not any(st.rule.alert == "CPUSpend" for st in plain.alerts.states)
    with_cost = Twin.for_app("otel-demo", history_s=600, addons=["opencost"])
    assert {st.rule.alert for st in with_cost.alerts.states} >= {"CPUSpend", "MemorySpend"}
