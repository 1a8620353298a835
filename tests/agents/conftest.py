from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from shop_fixtures import broken_shop  # noqa: E402
from support.fakes import Env, start_env  # noqa: E402


def _shop_dependencies() -> list[dict]:
    """The shop's call graph as the fake Jaeger reports it."""
    return [
        {"parent": "frontend", "child": "checkout", "callCount": 10},
        {"parent": "checkout", "child": "cart", "callCount": 7},
    ]


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Env]:
    from itbench_agents.k8s.kinds import GroupResource

    e, stop = start_env(tmp_path, broken_shop())

    def alerts() -> list[dict]:
        dep = e.twin.get(GroupResource("apps", "deployments"), "shop", "cart")
        if dep and dep["spec"].get("replicas", 1) > 0:
            return []
        return [
            {"labels": {"alertname": "HighRequestErrorRate", "service_name": "frontend", "namespace": "shop"},
             "state": "firing", "activeAt": "2025-06-15T12:00:00Z", "value": "0.4"},
        ]  # fmt: skip

    e.obs.alerts = alerts
    e.obs.dependencies = _shop_dependencies()
    try:
        yield e
    finally:
        stop()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    """The healthy shop app (no alerts unless a test sets them)."""
    e, stop = start_env(tmp_path)
    e.obs.dependencies = _shop_dependencies()
    try:
        yield e
    finally:
        stop()
