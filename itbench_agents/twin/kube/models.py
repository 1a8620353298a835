"""Schema facts about built-in kinds, read from the installed ``kubernetes`` client's model classes.

Each generated model class has ``openapi_types`` (python attribute → type string such as
``List[V1Container]``, ``Dict[str, str]``, ``datetime``, ``object``) and ``attribute_map``
(python attribute → JSON field). We turn those into :class:`FieldType` values that the OpenAPI
generator, strict field validation and the strategic-merge patcher all share. The patch strategy
table below is ours (the python client does not carry upstream's ``x-kubernetes-patch-*``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldType:
    """``kind`` is one of scalar/model/list/map/object/time/int-or-string/quantity."""

    kind: str
    name: str = ""  # scalar type (string/integer/number/boolean) or model class name
    item: FieldType | None = None  # element type of list/map


@dataclass(frozen=True)
class FieldInfo:
    json_name: str
    type: FieldType
    description: str
    required: bool


_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "bytearray": "string"}

# Fields the python client types as ``object`` that are int-or-string upstream.
INT_OR_STRING = {"port", "targetPort", "maxSurge", "maxUnavailable", "minAvailable", "partition"}
# Fields typed ``str`` that are resource.Quantity upstream (maps of quantities are handled by name).
QUANTITY_MAPS = {
    "limits",
    "requests",
    "capacity",
    "allocatable",
    "hard",
    "used",
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
    "usage",
    "overhead",
}

# (model, json field) → (patch strategy, merge key). Upstream's x-kubernetes-patch-* table.
PATCH_META: dict[tuple[str, str], tuple[str, str]] = {
    ("V1PodSpec", "containers"): ("merge", "name"),
    ("V1PodSpec", "initContainers"): ("merge", "name"),
    ("V1PodSpec", "ephemeralContainers"): ("merge", "name"),
    ("V1PodSpec", "volumes"): ("merge,retainKeys", "name"),
    ("V1PodSpec", "imagePullSecrets"): ("merge", "name"),
    ("V1PodSpec", "hostAliases"): ("merge", "ip"),
    ("V1PodSpec", "resourceClaims"): ("merge,retainKeys", "name"),
    ("V1PodSpec", "schedulingGates"): ("merge", "name"),
    ("V1Container", "env"): ("merge", "name"),
    ("V1Container", "ports"): ("merge", "containerPort"),
    ("V1Container", "volumeMounts"): ("merge", "mountPath"),
    ("V1Container", "volumeDevices"): ("merge", "devicePath"),
    ("V1EphemeralContainer", "env"): ("merge", "name"),
    ("V1EphemeralContainer", "ports"): ("merge", "containerPort"),
    ("V1EphemeralContainer", "volumeMounts"): ("merge", "mountPath"),
    ("V1EphemeralContainer", "volumeDevices"): ("merge", "devicePath"),
    ("V1ServiceSpec", "ports"): ("merge", "port"),
    ("V1ObjectMeta", "finalizers"): ("merge", ""),
    ("V1ObjectMeta", "ownerReferences"): ("merge", "uid"),
    ("V1DeploymentSpec", "strategy"): ("retainKeys", ""),
    ("V1PodStatus", "conditions"): ("merge", "type"),
    ("V1PodStatus", "podIPs"): ("merge", "ip"),
    ("V1NodeStatus", "conditions"): ("merge", "type"),
    ("V1NodeStatus", "addresses"): ("merge", "type"),
    ("V1DeploymentStatus", "conditions"): ("merge", "type"),
    ("V1ReplicaSetStatus", "conditions"): ("merge", "type"),
    ("V1StatefulSetStatus", "conditions"): ("merge", "type"),
    ("V1DaemonSetStatus", "conditions"): ("merge", "type"),
    ("V1JobStatus", "conditions"): ("merge", "type"),
    ("V1NamespaceStatus", "conditions"): ("merge", "type"),
    ("V1PersistentVolumeClaimStatus", "conditions"): ("merge", "type"),
    ("V1ReplicationControllerStatus", "conditions"): ("merge", "type"),
    ("V1ResourceRequirements", "claims"): ("merge", "name"),
    ("V1PodSpec", "topologySpreadConstraints"): ("merge", "topologyKey"),
    ("V1PodStatus", "hostIPs"): ("merge", "ip"),
    ("V1PodStatus", "resourceClaimStatuses"): ("merge,retainKeys", "name"),
    ("V1ContainerStatus", "volumeMounts"): ("merge", "mountPath"),
    ("V1ContainerStatus", "allocatedResourcesStatus"): ("merge", "name"),
    ("V1NodeSpec", "podCIDRs"): ("merge", ""),
    ("V1ServiceAccount", "secrets"): ("merge", "name"),
    ("V1PodDisruptionBudgetSpec", "selector"): ("replace", ""),
    ("V1CSINodeSpec", "drivers"): ("merge", "name"),
}


_PROTOCOLS = ("SCTP", "TCP", "UDP")
_EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")
# (model, json field) → the values of a string enum (upstream's "+enum" types; the python client
# does not carry them). Served as ``enum`` plus the "Possible enum values" list in the description.
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("V1AzureDiskVolumeSource", "cachingMode"): ("None", "ReadOnly", "ReadWrite"),
    ("V1AzureDiskVolumeSource", "kind"): ("Dedicated", "Managed", "Shared"),
    ("V1Container", "imagePullPolicy"): ("Always", "IfNotPresent", "Never"),
    ("V1Container", "terminationMessagePolicy"): ("FallbackToLogsOnError", "File"),
    ("V1ContainerPort", "protocol"): _PROTOCOLS,
    ("CoreV1EndpointPort", "protocol"): _PROTOCOLS,
    ("V1EphemeralContainer", "imagePullPolicy"): ("Always", "IfNotPresent", "Never"),
    ("V1EphemeralContainer", "terminationMessagePolicy"): ("FallbackToLogsOnError", "File"),
    ("V1HTTPGetAction", "scheme"): ("HTTP", "HTTPS"),
    ("V1HostPathVolumeSource", "type"): (
        "",
        "BlockDevice",
        "CharDevice",
        "Directory",
        "DirectoryOrCreate",
        "File",
        "FileOrCreate",
        "Socket",
    ),
    ("V1NamespaceStatus", "phase"): ("Active", "Terminating"),
    ("V1NodeSelectorRequirement", "operator"): ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"),
    ("V1NodeStatus", "phase"): ("Pending", "Running", "Terminated"),
    ("V1PersistentVolumeClaimSpec", "volumeMode"): ("Block", "Filesystem"),
    ("V1PersistentVolumeClaimStatus", "phase"): ("Bound", "Lost", "Pending"),
    ("V1PersistentVolumeSpec", "persistentVolumeReclaimPolicy"): ("Delete", "Recycle", "Retain"),
    ("V1PersistentVolumeSpec", "volumeMode"): ("Block", "Filesystem"),
    ("V1PersistentVolumeStatus", "phase"): ("Available", "Bound", "Failed", "Pending", "Released"),
    ("V1PodSecurityContext", "fsGroupChangePolicy"): ("Always", "OnRootMismatch"),
    ("V1PodSpec", "dnsPolicy"): ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
    ("V1PodSpec", "preemptionPolicy"): ("Never", "PreemptLowerPriority"),
    ("V1PodSpec", "restartPolicy"): ("Always", "Never", "OnFailure"),
    ("V1PodStatus", "phase"): ("Failed", "Pending", "Running", "Succeeded", "Unknown"),
    ("V1PodStatus", "qosClass"): ("BestEffort", "Burstable", "Guaranteed"),
    ("V1PortStatus", "protocol"): _PROTOCOLS,
    ("V1ScopedResourceSelectorRequirement", "operator"): ("DoesNotExist", "Exists", "In", "NotIn"),
    ("V1ScopedResourceSelectorRequirement", "scopeName"): (
        "BestEffort",
        "CrossNamespacePodAffinity",
        "NotBestEffort",
        "NotTerminating",
        "PriorityClass",
        "Terminating",
    ),
    ("V1SeccompProfile", "type"): ("Localhost", "RuntimeDefault", "Unconfined"),
    ("V1SecurityContext", "procMount"): ("Default", "Unmasked"),
    ("V1ServicePort", "protocol"): _PROTOCOLS,
    ("V1ServiceSpec", "externalTrafficPolicy"): ("Cluster", "Local"),
    ("V1ServiceSpec", "internalTrafficPolicy"): ("Cluster", "Local"),
    ("V1ServiceSpec", "ipFamilyPolicy"): ("PreferDualStack", "RequireDualStack", "SingleStack"),
    ("V1ServiceSpec", "sessionAffinity"): ("ClientIP", "None"),
    ("V1ServiceSpec", "type"): ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"),
    ("V1Taint", "effect"): _EFFECTS,
    ("V1Toleration", "effect"): _EFFECTS,
    ("V1Toleration", "operator"): ("Equal", "Exists"),
    ("V1TopologySpreadConstraint", "nodeAffinityPolicy"): ("Honor", "Ignore"),
    ("V1TopologySpreadConstraint", "nodeTaintsPolicy"): ("Honor", "Ignore"),
    ("V1TopologySpreadConstraint", "whenUnsatisfiable"): ("DoNotSchedule", "ScheduleAnyway"),
    ("V1VolumeMount", "mountPropagation"): ("Bidirectional", "HostToContainer", "None"),
}


def enum_values(model: str, field: str) -> tuple[str, ...]:
    return ENUMS.get((model, field), ())


@functools.cache
def model_class(name: str) -> Any:
    from kubernetes.client import models

    return getattr(models, name, None)


def parse_type(t: str) -> FieldType:
    t = t.strip()
    m = re.fullmatch(r"(?:List|list)\[(.+)\]", t)
    if m:
        return FieldType("list", item=parse_type(m.group(1)))
    m = re.fullmatch(r"(?:Dict|dict)[\[(]\s*str\s*,\s*(.+)[\])]", t)
    if m:
        return FieldType("map", item=parse_type(m.group(1)))
    if t in _SCALARS:
        return FieldType("scalar", _SCALARS[t])
    if t in ("datetime", "date"):
        return FieldType("time")
    if t == "object":
        return FieldType("object")
    if model_class(t) is not None:
        return FieldType("model", t)
    return FieldType("object")


def _clean_doc(doc: str | None) -> str:
    if not doc:
        return ""
    text = doc.split("Attributes:")[0]
    return " ".join(text.split())


@functools.cache
def model_doc(name: str) -> str:
    cls = model_class(name)
    return _clean_doc(cls.__doc__) if cls is not None else ""


@functools.cache
def model_fields(name: str) -> dict[str, FieldInfo]:
    """JSON field name → FieldInfo for a model class (empty for unknown names)."""
    cls = model_class(name)
    if cls is None:
        return {}
    out: dict[str, FieldInfo] = {}
    pyd = getattr(cls, "model_fields", {})
    for attr, tstr in cls.openapi_types.items():
        json_name = cls.attribute_map.get(attr, attr)
        ftype = parse_type(tstr)
        if ftype.kind == "object" and json_name in INT_OR_STRING:
            ftype = FieldType("int-or-string")
        if ftype.kind == "map" and json_name in QUANTITY_MAPS and ftype.item and ftype.item.kind == "scalar":
            ftype = FieldType("map", item=FieldType("quantity"))
        finfo = pyd.get(attr)
        desc = (getattr(finfo, "description", None) or "") if finfo is not None else ""
        required = bool(finfo.is_required()) if finfo is not None else False
        if json_name in ("apiVersion", "kind", "metadata"):
            required = False
        out[json_name] = FieldInfo(json_name, ftype, " ".join(desc.split()), required)
    return out


def patch_meta(model: str, field: str) -> tuple[str, str]:
    """(strategy, merge key) for a list/struct field; conditions lists of status types merge by type."""
    meta = PATCH_META.get((model, field))
    if meta is not None:
        return meta
    if field == "conditions" and model.endswith("Status"):
        return ("merge", "type")
    return ("", "")
