"""A PersistentVolumeClaim bound to its PersistentVolume, as kind's local-path provisioner leaves
them: the pair a scenario, the protected baseline or the FinOps canary creates when it needs storage
that exists (and costs) whether or not a pod mounts it. The volume is pre-bound to the claim
(``claimRef``) and the claim names the volume, so the persistent-volume controller binds them at
once, without the WaitForFirstConsumer wait of the default class."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def bound_claim(
    namespace: str, claim: str, volume: str, size: str, *, metadata: Obj | None = None
) -> list[Obj]:
    """``[PersistentVolume, PersistentVolumeClaim]`` of ``size`` (a quantity), reclaim policy
    Delete (deleting the claim deletes the volume); ``metadata`` goes on the claim (labels,
    annotations)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": volume,
                "annotations": {"pv.kubernetes.io/provisioned-by": "rancher.io/local-path"},
            },
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": "standard",
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": namespace,
                    "name": claim,
                },
                "hostPath": {"path": f"/var/local-path-provisioner/{volume}_{namespace}_{claim}"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {**(metadata or {}), "name": claim, "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "standard",
                "volumeName": volume,
                "resources": {"requests": {"storage": size}},
            },
        },
    ]
