"""Targeted verdict refresh: the watch index, and the verify mode that catches a runtime whose
reported reads are incomplete."""

from __future__ import annotations

import pytest
from ctl_helpers import PODS, ScriptedRuntime, cstatus

from itbench_agents.twin.controllers.verdict_watch import VerdictWatch
from itbench_agents.twin.runtime import ContainerVerdict, StaleCacheError, VerdictReads

CM = ("configmaps", "default", "settings")
NODE = ("nodes", "", "n1")


def test_watch_finds_readers_and_forgets() -> None:
    w = VerdictWatch()
    w.record(("u1", 0), VerdictReads(objects=frozenset({CM, NODE}), derived=("svc",)))
    w.record(("u2", 0), VerdictReads(objects=frozenset({NODE}), always=True))
    w.record(("u3", 0), None)
    assert w.readers(CM) == {("u1", 0)}
    assert w.due({CM}, derived_changed=False) == {("u1", 0), ("u2", 0), ("u3", 0)}
    assert w.due(set(), derived_changed=False) == {("u2", 0), ("u3", 0)}  # always + untraced
    assert ("u1", 0) in w.due(set(), derived_changed=True)
    w.record(("u1", 0), VerdictReads(objects=frozenset({NODE})))  # a new verdict replaces the reads
    assert w.readers(CM) == set() and w.readers(NODE) == {("u1", 0), ("u2", 0)}
    w.forget(("u1", 0))
    w.forget(("u2", 0))
    assert w.readers(NODE) == set() and w.due({NODE}, derived_changed=True) == {("u3", 0)}


class LyingRuntime(ScriptedRuntime):
    """Says its verdicts read nothing, yet answers from a setting that changes."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = True
        self.generation = 0

    def traced_verdict(self, pod, container, *, init, node, now):
        v = self.verdict(pod, container, init=init, node=node, now=now)
        if container["name"] == "app":
            v = ContainerVerdict(ready=self.ready)
        return v, VerdictReads(derived=("generation", self.generation))

    def still_current(self, reads, now):
        return bool(reads.derived == ("generation", self.generation))

    def derived_generation(self, now):
        return self.generation


def _run_pod(twin, name: str, container: str) -> None:
    twin.store.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": container, "image": "registry.example/app:1.0"}]},
        },
    )
    twin.advance(5)


def _start(twin, runtime) -> None:
    twin.runtime = runtime
    _run_pod(twin, "p", "app")


def _touch_other_pod(twin) -> None:
    _run_pod(twin, "other", "x")


def test_a_runtime_hiding_what_it_read_is_caught_in_verify_mode(twin) -> None:
    rt = LyingRuntime()
    _start(twin, rt)
    rt.ready = False  # the answer changes, but nothing the runtime reported reading did
    with pytest.raises(StaleCacheError, match="default/p container app"):
        _touch_other_pod(twin)


def test_only_containers_whose_reads_changed_are_asked_again(twin) -> None:
    twin.kubelet._verify = False
    rt = LyingRuntime()
    _start(twin, rt)
    rt.ready = False
    _touch_other_pod(twin)
    assert cstatus(twin.store.get(PODS, "default", "p"))["ready"] is True  # nothing it read changed
    rt.generation += 1  # its derived state changed: asked again at the next change
    twin.store.delete(PODS, "default", "other")
    twin.advance(15)
    assert cstatus(twin.store.get(PODS, "default", "p"))["ready"] is False
