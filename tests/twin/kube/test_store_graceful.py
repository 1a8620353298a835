"""ObjectStore.mark_deleted: graceful deletion without finalizers."""

from __future__ import annotations

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.k8s.times import parse_rfc3339
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.kube.store import ObjectStore

PODS = GroupResource("", "pods")


def _store() -> tuple[ObjectStore, ManualClock]:
    clock = ManualClock()
    return ObjectStore(clock.now, seed=1), clock


def test_marked_object_survives_updates_until_deleted() -> None:
    st, clock = _store()
    st.create(PODS, {"metadata": {"name": "a", "namespace": "n"}, "spec": {"x": 1}})
    marked = st.mark_deleted(PODS, "n", "a", 30)
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert parse_rfc3339(marked["metadata"]["deletionTimestamp"]) == int(clock.now()) + 30
    # status writes and full updates keep it (and the server-owned deletion fields)
    st.update(
        PODS, {"metadata": {"name": "a", "namespace": "n"}, "status": {"phase": "Running"}}, status_only=True
    )
    st.update(PODS, {"metadata": {"name": "a", "namespace": "n", "labels": {"k": "v"}}, "spec": {"x": 1}})
    cur = st.must_get(PODS, "n", "a")
    assert cur["metadata"]["deletionGracePeriodSeconds"] == 30 and cur["metadata"]["labels"] == {"k": "v"}
    # marking again only shortens the grace period
    assert st.mark_deleted(PODS, "n", "a", 60)["metadata"]["deletionGracePeriodSeconds"] == 30
    assert st.mark_deleted(PODS, "n", "a", 5)["metadata"]["deletionGracePeriodSeconds"] == 5
    types = [ev.type for ev in st.log]
    gone = st.delete(PODS, "n", "a")
    assert st.get(PODS, "n", "a") is None and gone["metadata"]["deletionGracePeriodSeconds"] == 5
    assert [ev.type for ev in st.log] == [*types, "DELETED"]


def test_status_merge_and_finalizers_still_rule() -> None:
    st, _ = _store()
    ns = GroupResource("", "namespaces")
    st.create(ns, {"metadata": {"name": "x", "finalizers": ["f"]}, "status": {"phase": "Active"}})
    m = st.mark_deleted(ns, "", "x", 0, status={"phase": "Terminating"})
    assert m["status"]["phase"] == "Terminating" and m["metadata"]["deletionGracePeriodSeconds"] == 0
    # with a finalizer a delete only confirms the mark; dropping the last finalizer removes it
    assert st.delete(ns, "", "x")["metadata"]["finalizers"] == ["f"]
    st.update(ns, {"metadata": {"name": "x"}, "status": {"phase": "Terminating"}})
    assert st.get(ns, "", "x") is None
