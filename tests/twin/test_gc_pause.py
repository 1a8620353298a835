"""A twin is built with Python's automatic collection off (``twin/gc_pause.py``), and the
collector is as it was once the build returns."""

from __future__ import annotations

import gc

import pytest

from itbench_agents.twin.app import behaviour
from itbench_agents.twin.gc_pause import collection_paused
from itbench_agents.twin.instance import Twin


@pytest.fixture(autouse=True)
def _collector_restored():
    enabled = gc.isenabled()
    yield
    gc.enable() if enabled else gc.disable()


@pytest.mark.parametrize("enabled", [True, False])
def test_collection_is_paused_inside_and_as_it_was_after(enabled: bool) -> None:
    gc.enable() if enabled else gc.disable()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled
    with pytest.raises(RuntimeError), collection_paused():
        raise RuntimeError("the build failed")
    assert gc.isenabled() is enabled


def test_the_app_and_its_past_are_built_without_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    recompute = behaviour.BehaviourModel.recompute
    during: list[bool] = []

    def recorded(self: behaviour.BehaviourModel) -> None:
        during.append(gc.isenabled())
        recompute(self)

    monkeypatch.setattr(behaviour.BehaviourModel, "recompute", recorded)
    gc.enable()
    twin = Twin.for_app("otel-demo", seed=3, history_s=600, past=True)
    try:
        assert during and not any(during), "the behaviour model ran with automatic collection on"
        assert gc.isenabled(), "after the build, the twin runs with the collector on"
    finally:
        twin.close()
