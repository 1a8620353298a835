"""ResourceQuota and LimitRange admission, FailedCreate on ReplicaSets, quota status."""

from __future__ import annotations

import pytest
from ctl_helpers import DEPLOYMENTS, PODS, REPLICASETS, claim, condition, deployment, events_for, pods_of

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.controllers.admission import admit
from itbench_agents.twin.kube.errors import ApiError
from itbench_agents.twin.kube.store import clone

QUOTAS = GroupResource("", "resourcequotas")
LIMITRANGES = GroupResource("", "limitranges")
CONFIGMAPS = GroupResource("", "configmaps")


def _quota(name, hard, ns="default"):
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"hard": hard},
    }


def _pod(name, **res):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "img:1", "resources": res}]},
    }


def test_exceeded_quota_message(twin):
    twin.store.create(QUOTAS, _quota("q", {"limits.memory": "1Gi"}))
    twin.store.create(PODS, admit(twin, PODS, _pod("a", limits={"memory": "768Mi"}), "CREATE"))
    with pytest.raises(ApiError) as e:
        admit(twin, PODS, _pod("x", limits={"memory": "512Mi"}), "CREATE")
    assert e.value.code == 403 and e.value.reason == "Forbidden"
    assert e.value.message == (
        'pods "x" is forbidden: exceeded quota: q, requested: limits.memory=512Mi, used: limits.memory=768Mi, '
        "limited: limits.memory=1Gi"
    )


def test_must_specify_message(twin):
    twin.store.create(QUOTAS, _quota("q", {"limits.memory": "1Gi", "requests.cpu": "2"}))
    with pytest.raises(ApiError) as e:
        admit(twin, PODS, _pod("x"), "CREATE")
    assert (
        e.value.message
        == 'pods "x" is forbidden: failed quota: q: must specify limits.memory for: c; requests.cpu for: c'
    )


def test_quota_usage_follows_every_pod_change_with_its_memo(twin):
    """The usage a quota check sums is memoised per pod (uid and resourceVersion): a replaced or
    deleted pod counts as it is now, never as it was."""
    from itbench_agents.twin.controllers.admission import namespace_usage, pod_usage

    q = _quota("q", {"requests.memory": "4Gi", "pods": "10"})
    twin.store.create(QUOTAS, q)
    for name, mem in (("a", "1Gi"), ("b", "512Mi")):
        twin.store.create(PODS, admit(twin, PODS, _pod(name, requests={"memory": mem}), "CREATE"))

    def fresh():
        want = {"requests.memory": 0.0, "pods": 0.0}
        for p in twin.store.list(PODS, "default"):
            for r, v in pod_usage(p).items():
                if r in want:
                    want[r] += v
        return want

    assert namespace_usage(twin, "default", q) == fresh() == {"requests.memory": 1.5 * 2**30, "pods": 2.0}
    assert twin.memo["quota.pod_usage"]  # filled by the checks
    twin.store.delete(PODS, "default", "b")
    big = _pod("b", requests={"memory": "2Gi"})
    twin.store.create(PODS, admit(twin, PODS, big, "CREATE"))  # same name, another pod
    assert namespace_usage(twin, "default", q) == fresh() == {"requests.memory": 3 * 2**30, "pods": 2.0}
    with pytest.raises(ApiError, match="used: requests.memory=3Gi"):
        admit(twin, PODS, _pod("c", requests={"memory": "2Gi"}), "CREATE")
    twin.memo.clear()  # dropping the memo changes nothing but speed
    assert namespace_usage(twin, "default", q) == fresh()


def test_pod_count_quota_and_object_count(twin):
    twin.store.create(QUOTAS, _quota("counts", {"pods": "1", "count/configmaps": "2"}))
    twin.store.create(PODS, admit(twin, PODS, _pod("a"), "CREATE"))
    with pytest.raises(ApiError) as e:
        admit(twin, PODS, _pod("b"), "CREATE")
    assert "exceeded quota: counts, requested: pods=1, used: pods=1, limited: pods=1" in e.value.message
    # kube-root-ca.crt already counts as one config map
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}
    twin.store.create(CONFIGMAPS, admit(twin, CONFIGMAPS, cm, "CREATE"))
    with pytest.raises(ApiError) as e:
        admit(twin, CONFIGMAPS, {**cm, "metadata": {"name": "b", "namespace": "default"}}, "CREATE")
    assert e.value.message.startswith(
        'configmaps "b" is forbidden: exceeded quota: counts, requested: count/configmaps=1'
    )


def test_replicaset_failed_create_and_recovery(twin):
    twin.store.create(QUOTAS, _quota("memory", {"requests.memory": "1Gi"}))
    twin.store.create(DEPLOYMENTS, deployment("ad", replicas=1, requests={"memory": "2Gi"}))
    twin.advance(30)
    assert pods_of(twin, "ad") == []
    [rs] = [r for r in twin.store.list(REPLICASETS, "default") if r["metadata"]["name"].startswith("ad-")]
    evs = events_for(twin, rs["metadata"]["name"], "FailedCreate")
    # each retry names a new pod; after 9 distinct messages the recorder combines them
    assert len(evs) == 10
    combined = [e for e in evs if e["message"].startswith("(combined from similar events): ")]
    assert len(combined) == 1 and combined[0]["count"] >= 2
    for ev in evs:
        assert ev["type"] == "Warning" and ev["source"]["component"] == "replicaset-controller"
        assert (
            ev["message"]
            .removeprefix("(combined from similar events): ")
            .startswith(f'Error creating: pods "{rs["metadata"]["name"]}-')
        )
        assert ev["message"].endswith(
            "is forbidden: exceeded quota: memory, requested: requests.memory=2Gi, used: requests.memory=0, "
            "limited: requests.memory=1Gi"
        )
    assert condition(rs, "ReplicaFailure")["reason"] == "FailedCreate"
    d = twin.store.get(DEPLOYMENTS, "default", "ad")
    assert condition(d, "ReplicaFailure")["status"] == "True"
    q = twin.store.get(QUOTAS, "default", "memory")
    assert q["status"] == {"hard": {"requests.memory": "1Gi"}, "used": {"requests.memory": "0"}}
    # the fix: raise the quota -> the ReplicaSet creates its pod
    q = clone(q)
    q["spec"]["hard"]["requests.memory"] = "4Gi"
    q["metadata"].pop("resourceVersion")
    twin.store.update(QUOTAS, q)
    twin.advance(5)
    assert len(pods_of(twin, "ad")) == 1
    assert twin.store.get(QUOTAS, "default", "memory")["status"]["used"] == {"requests.memory": "2Gi"}
    assert condition(twin.store.get(DEPLOYMENTS, "default", "ad"), "ReplicaFailure") is None


def test_limit_range_defaults_and_max(twin):
    twin.store.create(
        LIMITRANGES,
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "lr", "namespace": "default"},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "default": {"memory": "512Mi"},
                        "defaultRequest": {"memory": "256Mi"},
                        "max": {"memory": "1Gi"},
                    }
                ]
            },
        },
    )
    pod = admit(twin, PODS, _pod("a"), "CREATE")
    res = pod["spec"]["containers"][0]["resources"]
    assert res == {"limits": {"memory": "512Mi"}, "requests": {"memory": "256Mi"}}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container c; memory limit for container c"
    )
    with pytest.raises(ApiError) as e:
        admit(twin, PODS, _pod("b", limits={"memory": "2Gi"}), "CREATE")
    assert (
        e.value.message
        == 'pods "b" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi'
    )


def test_a_claim_limit_range_refuses_claims_outside_it_and_defaults_nothing(twin):
    pvcs = GroupResource("", "persistentvolumeclaims")
    twin.store.create(
        LIMITRANGES,
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "claims", "namespace": "default"},
            "spec": {
                "limits": [
                    {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "500Gi"}}
                ]
            },
        },
    )
    ok = admit(twin, pvcs, claim("ok", "20Gi"), "CREATE")
    assert ok["spec"]["resources"] == {"requests": {"storage": "20Gi"}}
    with pytest.raises(ApiError) as e:
        admit(twin, pvcs, claim("big", "1Ti"), "CREATE")
    assert e.value.code == 403 and e.value.message == (
        'persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 500Gi, '
        "but request is 1Ti"
    )
    with pytest.raises(ApiError) as e:
        admit(twin, pvcs, claim("none", None), "CREATE")
    assert e.value.message == (
        'persistentvolumeclaims "none" is forbidden: [minimum storage usage per PersistentVolumeClaim is 1Gi.  '
        "No request is specified, maximum storage usage per PersistentVolumeClaim is 500Gi.  No request is specified]"
    )
    pod = admit(twin, PODS, _pod("a"), "CREATE")  # a claim item says nothing about containers
    assert "kubernetes.io/limit-ranger" not in (pod["metadata"].get("annotations") or {})


def test_limits_default_requests_and_qos(twin):
    pod = admit(twin, PODS, _pod("a", limits={"memory": "1Gi", "cpu": "1"}), "CREATE")
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"memory": "1Gi", "cpu": "1"}
    assert pod["status"]["qosClass"] == "Guaranteed"
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert admit(twin, PODS, _pod("b", requests={"cpu": "1"}), "CREATE")["status"]["qosClass"] == "Burstable"


SERVICEACCOUNTS = GroupResource("", "serviceaccounts")
STATEFULSETS = GroupResource("apps", "statefulsets")


def _service_account(name, ns="default"):
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}


def _live(twin, prefix):
    return [p for p in pods_of(twin, prefix) if not p["metadata"].get("deletionTimestamp")]


def test_a_deleted_service_account_stops_new_pods_until_it_is_back(twin):
    """Issue 26: deleting the ServiceAccount a workload runs as breaks its next pods, as on a real
    cluster (the running ones go on); recreating it lets the ReplicaSet catch up."""
    twin.store.create(SERVICEACCOUNTS, _service_account("api"))
    twin.store.create(DEPLOYMENTS, deployment("web", replicas=2, serviceAccountName="api"))
    twin.advance(10)
    running = _live(twin, "web")
    assert len(running) == 2
    twin.store.delete(SERVICEACCOUNTS, "default", "api")
    pod = _pod("x")
    pod["spec"]["serviceAccountName"] = "api"
    with pytest.raises(ApiError) as e:
        admit(twin, PODS, pod, "CREATE")
    assert e.value.code == 403 and e.value.message == (
        'pods "x" is forbidden: error looking up service account default/api: serviceaccount "api" not found'
    )
    twin.store.delete(PODS, "default", running[0]["metadata"]["name"])
    twin.advance(30)
    assert [p["metadata"]["name"] for p in _live(twin, "web")] == [running[1]["metadata"]["name"]]
    [rs] = [r for r in twin.store.list(REPLICASETS, "default") if r["metadata"]["name"].startswith("web-")]
    assert 'serviceaccount "api" not found' in condition(rs, "ReplicaFailure")["message"]
    assert events_for(twin, rs["metadata"]["name"], "FailedCreate")
    twin.store.create(SERVICEACCOUNTS, _service_account("api"))
    twin.advance(5)
    assert len(_live(twin, "web")) == 2


def test_a_statefulset_waits_for_its_service_account(twin):
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"serviceAccountName": "db", "containers": [{"name": "db", "image": "img:1"}]},
            },
        },
    }
    twin.store.create(STATEFULSETS, sts)
    twin.advance(10)
    assert twin.store.get(PODS, "default", "db-0") is None
    [ev] = events_for(twin, "db", "FailedCreate")
    assert ev["message"] == (
        'create Pod db-0 in StatefulSet db failed error: pods "db-0" is forbidden: error looking up '
        'service account default/db: serviceaccount "db" not found'
    )
    twin.store.create(SERVICEACCOUNTS, _service_account("db"))
    twin.advance(5)
    assert twin.store.get(PODS, "default", "db-0") is not None
