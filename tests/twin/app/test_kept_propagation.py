"""Pods no app workload or Service selects (a CronJob's runs, the FinOps canary, a debug pod) change
no propagation (``twin/app/selected_pods.py``): the behaviour model notes its last one again at
the time it would have recomputed. The cluster and the health timeline must come out exactly as
when every change is propagated; with the tests' check on, a kept propagation that a fresh one
contradicts raises."""

from __future__ import annotations

import json
from typing import Any

import pytest

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.app import propagation
from itbench_agents.twin.app.behaviour import BehaviourModel
from itbench_agents.twin.app.selected_pods import SelectedPods
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.store import ChangeEvent, ObjectStore
from itbench_agents.twin.runtime import VERIFY_ENV, StaleCacheError

T0 = 1_750_000_000.0
CRONJOBS = GroupResource("batch", "cronjobs")
DEPLOYMENTS = GroupResource("apps", "deployments")
PODS = GroupResource("", "pods")
SERVICES = GroupResource("", "services")


def _cronjob(ns: str) -> dict[str, Any]:
    """A housekeeping CronJob as the churn's look-alike plants one: a run every 5 minutes."""
    task = {
        "name": "task",
        "image": "busybox:1.36",
        "command": ["sh", "-c", "echo done; sleep 2"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cache-report", "namespace": ns},
        "spec": {
            "schedule": "*/5 * * * *",
            "successfulJobsHistoryLimit": 2,
            "jobTemplate": {
                "spec": {"template": {"spec": {"containers": [task], "restartPolicy": "OnFailure"}}}
            },
        },
    }


class PropagationCount:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs = 0
        real = propagation.Propagation.run

        def counting(prop: propagation.Propagation, now: float) -> propagation.Result:
            self.runs += 1
            return real(prop, now)

        monkeypatch.setattr(propagation.Propagation, "run", counting)


def _with_cronjob(keep: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Twin, list[tuple[Any, ...]]]:
    tw = Twin.for_app("chain", clock=ManualClock(T0), history_s=0)
    assert isinstance(tw.behaviour, BehaviourModel)
    if not keep:
        monkeypatch.setattr(tw.behaviour, "_kept", lambda fx: False)
    tw.advance(300)
    tw.apply([_cronjob(tw.app.namespace)])
    tw.advance(1800, step=30)
    log = [(e.rv, e.type, str(e.gr), json.dumps(e.obj, sort_keys=True), e.time) for e in tw.store.log]
    return tw, log


def test_a_cronjobs_runs_are_kept_out_of_the_propagation_and_the_cluster_ends_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VERIFY_ENV, "0")  # count only the propagations really run
    counted = PropagationCount(monkeypatch)
    every, every_log = _with_cronjob(False, monkeypatch)
    runs_every = counted.runs
    counted.runs = 0
    monkeypatch.undo()
    monkeypatch.setenv(VERIFY_ENV, "0")
    counted = PropagationCount(monkeypatch)
    kept, kept_log = _with_cronjob(True, monkeypatch)
    job_pods = {e[3] for e in kept_log if e[2] == str(PODS) and '"Job"' in e[3]}
    assert len(job_pods) > 20  # six runs, each a pod written several times
    assert kept_log == every_log
    assert kept.health._times == every.health._times
    assert kept.health._snaps == every.health._snaps
    assert counted.runs * 3 < runs_every, (counted.runs, runs_every)


def test_with_the_check_on_a_kept_propagation_is_computed_anyway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VERIFY_ENV, "1")
    tw, _ = _with_cronjob(True, monkeypatch)
    assert tw.behaviour.probe().ok


def test_a_pod_change_wrongly_called_outside_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A selection that misses an app's pod is caught: deleting a service's only pod, kept as if
    outside, differs from a fresh propagation."""
    monkeypatch.setenv(VERIFY_ENV, "1")
    tw = Twin.for_app("chain", clock=ManualClock(T0), history_s=0)
    tw.advance(300)
    monkeypatch.setattr(SelectedPods, "outside", lambda self, ev: True)
    pod = tw.store.list(PODS, tw.app.namespace)[0]
    with pytest.raises(StaleCacheError, match="unselected pods is stale"):
        tw.store.delete(PODS, tw.app.namespace, pod["metadata"]["name"])
        tw.advance(60)


def _event(kind: str, uid: str, labels: dict[str, str]) -> ChangeEvent:
    obj = {"metadata": {"name": uid, "namespace": "app", "uid": uid, "labels": labels}}
    return ChangeEvent(rv=1, type=kind, gr=PODS, obj=obj, time=T0)  # type: ignore[arg-type]


def test_a_pod_is_outside_only_while_nothing_selects_it_nor_did_when_last_seen() -> None:
    store = ObjectStore(now=lambda: T0)
    store.create(
        SERVICES,
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "app"},
         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    )  # fmt: skip
    store.create(
        SERVICES,  # no selector: endpoints by hand, selects no pod
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "app"},
         "spec": {"ports": [{"port": 80}]}},
    )  # fmt: skip
    by_workload = {"api": "api"}
    sel = SelectedPods(store, "app", lambda pod: by_workload.get(pod["metadata"]["labels"].get("app", "")))
    assert not sel.outside(_event("ADDED", "a", {"app": "api"}))  # an app workload's
    assert not sel.outside(_event("ADDED", "w", {"app": "web"}))  # a Service's
    assert sel.outside(_event("ADDED", "j", {"job-name": "report"}))
    assert sel.outside(_event("MODIFIED", "j", {"job-name": "report"}))
    assert not sel.outside(_event("MODIFIED", "a", {"app": "debug"}))  # relabelled away: its leaving counts
    assert sel.outside(_event("MODIFIED", "a", {"app": "debug"}))
    assert not sel.outside(_event("MODIFIED", "j", {"app": "web"}))  # relabelled in
    assert not sel.outside(_event("DELETED", "j", {"app": "web"}))
    assert not sel.outside(_event("DELETED", "w", {"app": "web"}))
    store.create(
        SERVICES,
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "debug", "namespace": "app"},
         "spec": {"selector": {"app": "debug"}, "ports": [{"port": 80}]}},
    )  # fmt: skip
    sel.services_changed()
    assert not sel.outside(_event("MODIFIED", "a", {"app": "debug"}))  # a new Service selects it
