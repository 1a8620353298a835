"""The collector around a twin episode: off while the twin builds (``twin/gc_pause.py``), the
prepared heap frozen while the episode runs (``harness/gc_policy.py``), everything as before once
the backend closes."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from itbench_agents.harness import gc_policy
from itbench_agents.harness.backend import ProvisionRequest
from itbench_agents.harness.twin_backend import TwinBackend


@pytest.fixture(autouse=True)
def _collector_restored():
    enabled = gc.isenabled()
    gc.unfreeze()  # whatever an earlier test of this worker left frozen
    yield
    gc.unfreeze()
    gc.enable() if enabled else gc.disable()


def test_a_process_that_froze_objects_itself_is_left_as_it_is() -> None:
    gc.freeze()
    assert gc.get_freeze_count() > 0
    frozen = gc_policy.freeze()
    assert frozen is False
    gc_policy.thaw(frozen)
    # not compared with the count before: frozen objects freed meanwhile leave the permanent generation
    assert gc.get_freeze_count() > 0, "their frozen objects were thawed"


def test_the_twin_is_built_without_collections_frozen_while_it_runs_and_thawed_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from itbench_agents.twin.instance import Twin

    build = Twin.for_app.__func__  # type: ignore[attr-defined]
    during: list[bool] = []

    def for_app(cls, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        during.append(gc.isenabled())
        return build(cls, *args, **kwargs)

    monkeypatch.setattr(Twin, "for_app", classmethod(for_app))
    backend = TwinBackend()
    try:
        backend.provision(ProvisionRequest(app="otel-demo", seed=1, history_s=600, folder=tmp_path))
        assert during == [False], "automatic collection is off while the twin is built"
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0, "the prepared cluster is frozen while the episode runs"
        backend.advance(60, step=15)  # the episode goes on with the collector on
    finally:
        backend.close()
    assert gc.get_freeze_count() == 0, "closing the backend thaws the heap"
