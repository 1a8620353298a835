"""The persistent-volume controller: static binding, Released volumes, classes and provisioning."""

from __future__ import annotations

from ctl_helpers import DEPLOYMENTS, claim, condition, deployment, events_for, pods_of

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.controllers.admission import admit
from itbench_agents.twin.kube.store import clone

PVS = GroupResource("", "persistentvolumes")
PVCS = GroupResource("", "persistentvolumeclaims")
SCS = GroupResource("storage.k8s.io", "storageclasses")


def _static(twin, cls="geo-storage", pv="geo-pv"):
    twin.store.create(
        SCS,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": cls},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "Immediate",
        },
    )
    twin.store.create(
        PVS,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "1Gi"},
                "storageClassName": cls,
                "hostPath": {"path": f"/data/volumes/{pv}"},
            },
        },
    )


def _claim(name="geo-pvc", cls="geo-storage", size="1Gi"):
    return claim(name, size, cls)


def test_static_volume_binds_and_pod_runs(twin):
    _static(twin)
    twin.store.create(PVCS, admit(twin, PVCS, _claim(), "CREATE"))
    vols = [{"name": "data", "persistentVolumeClaim": {"claimName": "geo-pvc"}}]
    twin.store.create(DEPLOYMENTS, deployment("mongodb-geo", volumes=vols))
    twin.advance(10)
    pv = twin.store.get(PVS, "", "geo-pv")
    pvc = twin.store.get(PVCS, "default", "geo-pvc")
    assert pv["status"]["phase"] == "Bound" and pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert pvc["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "1Gi"},
    }
    assert pods_of(twin, "mongodb-geo")[0]["status"]["phase"] == "Running"


def test_released_volume_does_not_rebind_until_claimref_cleared(twin):
    _static(twin)
    twin.store.create(PVCS, admit(twin, PVCS, _claim(), "CREATE"))
    twin.advance(2)
    twin.store.delete(PVCS, "default", "geo-pvc")
    twin.advance(2)
    assert twin.store.get(PVS, "", "geo-pv")["status"]["phase"] == "Released"
    # redeploy: a new claim with the same name cannot take the Released volume
    twin.store.create(PVCS, admit(twin, PVCS, _claim(), "CREATE"))
    vols = [{"name": "data", "persistentVolumeClaim": {"claimName": "geo-pvc"}}]
    twin.store.create(DEPLOYMENTS, deployment("mongodb-geo", volumes=vols))
    twin.advance(40)
    pvc = twin.store.get(PVCS, "default", "geo-pvc")
    assert pvc["status"]["phase"] == "Pending"
    [ev] = events_for(twin, "geo-pvc", "ExternalProvisioning")
    assert ev["count"] >= 2  # repeated on every resync
    [pod] = pods_of(twin, "mongodb-geo")
    assert condition(pod, "PodScheduled")["message"] == (
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )
    # the fix: clear the stale claimRef
    pv = clone(twin.store.get(PVS, "", "geo-pv"))
    del pv["spec"]["claimRef"]
    pv["metadata"].pop("resourceVersion")
    twin.store.update(PVS, pv)
    twin.advance(10)
    assert twin.store.get(PVCS, "default", "geo-pvc")["status"]["phase"] == "Bound"
    assert pods_of(twin, "mongodb-geo")[0]["status"]["phase"] == "Running"


def test_missing_storage_class(twin):
    twin.store.create(PVCS, admit(twin, PVCS, _claim(cls="invalid-class-name"), "CREATE"))
    twin.advance(2)
    [ev] = events_for(twin, "geo-pvc", "ProvisioningFailed")
    assert (
        ev["type"] == "Warning"
        and ev["message"] == 'storageclass.storage.k8s.io "invalid-class-name" not found'
    )
    assert twin.store.get(PVCS, "default", "geo-pvc")["status"]["phase"] == "Pending"


def test_no_class_and_no_volume(twin):
    claim = _claim(cls="")
    twin.store.create(PVCS, admit(twin, PVCS, claim, "CREATE"))
    twin.advance(2)
    [ev] = events_for(twin, "geo-pvc", "FailedBinding")
    assert ev["message"] == "no persistent volumes available for this claim and no storage class is set"


def test_wait_for_first_consumer_then_provision(twin):
    twin.store.create(PVCS, admit(twin, PVCS, _claim(cls=None), "CREATE"))
    twin.advance(2)
    assert twin.store.get(PVCS, "default", "geo-pvc")["status"]["phase"] == "Pending"
    assert (
        events_for(twin, "geo-pvc", "WaitForFirstConsumer")[0]["message"]
        == "waiting for first consumer to be created before binding"
    )
    vols = [{"name": "data", "persistentVolumeClaim": {"claimName": "geo-pvc"}}]
    twin.store.create(DEPLOYMENTS, deployment("db", volumes=vols))
    twin.advance(5)
    pvc = twin.store.get(PVCS, "default", "geo-pvc")
    assert pvc["status"]["phase"] == "Bound"
    pv = twin.store.get(PVS, "", pvc["spec"]["volumeName"])
    assert (
        pv["spec"]["storageClassName"] == "standard"
        and pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    )
    assert pods_of(twin, "db")[0]["status"]["phase"] == "Running"
    # reclaim policy Delete: the provisioned volume goes with its claim
    twin.store.delete(DEPLOYMENTS, "default", "db")
    twin.store.delete(PVCS, "default", "geo-pvc")
    twin.advance(5)
    assert twin.store.get(PVS, "", pvc["spec"]["volumeName"]) is None or twin.store.get(
        PVS, "", pvc["spec"]["volumeName"]
    )["metadata"].get("deletionTimestamp")
