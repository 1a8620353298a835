"""Defaulting the apiserver applies on create (service cluster IPs, workload spec defaults,
namespace labels, CRD status). Pod defaults and quota/limit admission live in
``twin.controllers.admission``."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

from ...k8s.kinds import GroupResource
from .store import ObjectStore, clone

Obj = dict[str, Any]

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")
SERVICES = GroupResource("", "services")


def allocate_cluster_ip(store: ObjectStore, namespace: str, name: str) -> str:
    """A free service IP, chosen deterministically from the service's name (then probing upward)."""
    used = {s.get("spec", {}).get("clusterIP") for s in store.list(SERVICES)}
    import zlib

    size = SERVICE_CIDR.num_addresses
    start = zlib.crc32(f"{namespace}/{name}".encode()) % (size - 20) + 10
    for k in range(size):
        ip = str(SERVICE_CIDR.network_address + (start + k) % (size - 2) + 1)
        if ip not in used:
            return ip
    return "None"


def _template_defaults(tmpl: Obj) -> None:
    spec = tmpl.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        image = str(c.get("image", ""))
        last = image.rsplit("/", 1)[-1]
        c.setdefault(
            "imagePullPolicy",
            "Always" if (":" not in last or last.endswith(":latest")) and "@" not in last else "IfNotPresent",
        )
        c.setdefault("resources", {})
        for p in c.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")


def prepare_for_storage(store: ObjectStore, info: Any, obj: Obj, old: Obj | None = None) -> Obj:
    """What the apiserver does to a decoded object before storing it: convert a served version to the
    storage version and fill defaults. Returns a new dict (``obj`` is not changed). ``info`` is the
    object's ``ResourceInfo``."""
    from .conversion import to_storage

    out = to_storage(info.gr, info.version, clone(obj))
    return apply_defaults(store, info, out, old=old)


def apply_defaults(store: ObjectStore, info: Any, obj: Obj, old: Obj | None = None) -> Obj:
    """:func:`apply_create_defaults`, plus the ``default`` values of a CRD's structural schema (the
    apiserver fills them wherever the object has the enclosing field). In place; returns it."""
    apply_create_defaults(store, info.gr, obj, old=old)
    if getattr(info, "crd", None) is not None:
        schema = (info.crd_version.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            schema_defaults(schema, obj)
    return obj


def schema_defaults(schema: Obj, value: Any) -> None:
    """Fill ``default`` values of ``schema``'s properties into ``value``, recursively (objects and
    array items); in place."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, dict):
                continue
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                schema_defaults(sub, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            schema_defaults(schema["items"], item)


def apply_create_defaults(store: ObjectStore, gr: GroupResource, obj: Obj, old: Obj | None = None) -> Obj:
    """Fill server-side defaults into an object being created, or (with ``old``) updated — the
    apiserver defaults every object it decodes. In place; returns it."""
    g, r = gr.group, gr.resource
    spec = obj.get("spec")
    if (
        g == "apps"
        and r in ("deployments", "replicasets", "statefulsets", "daemonsets")
        and isinstance(spec, dict)
    ):
        if r != "daemonsets":
            spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        if r == "deployments":
            spec.setdefault("progressDeadlineSeconds", 600)
            strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
            if isinstance(strategy, dict) and strategy.get("type", "RollingUpdate") == "RollingUpdate":
                strategy.setdefault("type", "RollingUpdate")
                strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
        if r == "statefulsets":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        if r == "daemonsets":
            spec.setdefault(
                "updateStrategy",
                {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            )
        if isinstance(spec.get("template"), dict):
            _template_defaults(spec["template"])
    elif g == "batch" and r == "jobs" and isinstance(spec, dict):
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completions", 1)
        spec.setdefault("parallelism", 1)
        if isinstance(spec.get("template"), dict):
            _template_defaults(spec["template"])
            spec["template"]["spec"].setdefault("restartPolicy", "Never")
    elif g == "" and r == "services" and isinstance(spec, dict):
        typ = spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if typ != "ExternalName":
            old_spec = (old or {}).get("spec") or {}
            if not spec.get("clusterIP") and old_spec.get("clusterIP"):
                spec["clusterIP"] = old_spec["clusterIP"]
            if not spec.get("clusterIP"):
                meta = obj.get("metadata", {})
                spec["clusterIP"] = allocate_cluster_ip(
                    store, meta.get("namespace", ""), meta.get("name", "")
                )
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            if spec["clusterIP"] != "None":
                spec.setdefault("ipFamilies", ["IPv4"])
                spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        for p in spec.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")
                p.setdefault("targetPort", p.get("port"))
        obj.setdefault("status", {"loadBalancer": {}})
    elif g == "" and r == "namespaces":
        meta = obj.setdefault("metadata", {})
        labels = meta.setdefault("labels", {})
        if isinstance(labels, dict):
            labels.setdefault("kubernetes.io/metadata.name", meta.get("name", ""))
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        if old is None or not obj.get("status"):
            obj["status"] = (old or {}).get("status") or {"phase": "Active"}
    elif g == "" and r == "secrets":
        obj.setdefault("type", "Opaque")
    elif g == "apiextensions.k8s.io" and r == "customresourcedefinitions" and isinstance(spec, dict):
        names = spec.get("names") or {}
        accepted = {
            "plural": names.get("plural", ""),
            "singular": names.get("singular") or str(names.get("kind", "")).lower(),
            "kind": names.get("kind", ""),
            "listKind": names.get("listKind") or f"{names.get('kind', '')}List",
        }
        for k in ("shortNames", "categories"):
            if names.get(k):
                accepted[k] = names[k]
        spec["names"] = {**accepted, **names}
        spec.setdefault("scope", "Namespaced")
        obj["status"] = {
            "acceptedNames": accepted,
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
            ],
            "storedVersions": [v.get("name") for v in spec.get("versions") or [] if v.get("storage")],
        }
    return obj
