"""Discovery documents: legacy (APIVersions, APIGroupList, APIResourceList) and aggregated
(apidiscovery.k8s.io/v2 APIGroupDiscoveryList), built from a :class:`ResourceRegistry`."""

from __future__ import annotations

from typing import Any

from ...k8s.kinds import ResourceInfo
from .resources import SUBRESOURCE_KINDS, ResourceRegistry

Obj = dict[str, Any]

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

SUBRESOURCE_VERBS: dict[str, tuple[str, ...]] = {
    "status": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "log": ("get",),
    "eviction": ("create",),
    "binding": ("create",),
    "exec": ("create", "get"),
    "attach": ("create", "get"),
    "portforward": ("create", "get"),
    "proxy": ("create", "delete", "get", "patch", "update"),
    "finalize": ("update",),
    "token": ("create",),
    "ephemeralcontainers": ("get", "patch", "update"),
    "resize": ("get", "patch", "update"),
}


def wants_aggregated(accept: str) -> str | None:
    """The aggregated content type to answer with, if the Accept header asks for one."""
    a = accept.replace(" ", "")
    if "as=APIGroupDiscoveryList" not in a:
        return None
    if "v=v2;" in a or a.endswith("v=v2") or "v=v2;as" in a:
        return AGGREGATED_V2
    return AGGREGATED_V2BETA1


def _sub_kind(info: ResourceInfo, sub: str) -> tuple[str, str, str]:
    if sub == "proxy":
        return (info.group, info.version, f"{info.kind}ProxyOptions")
    return SUBRESOURCE_KINDS.get(sub, (info.group, info.version, info.kind))


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, versions: list[str]) -> Obj:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(reg: ResourceRegistry) -> Obj:
    groups = [_group_entry(g, vs) for g, vs in reg.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(reg: ResourceRegistry, group: str) -> Obj | None:
    vs = reg.group_versions().get(group)
    if not vs or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, vs)}


def api_resource_list(reg: ResourceRegistry, group: str, version: str) -> Obj | None:
    infos = reg.resources_in(group, version)
    if not infos:
        return None
    resources: list[Obj] = []
    for i in sorted(infos, key=lambda i: i.resource):
        r: Obj = {
            "name": i.resource,
            "singularName": i.singular_name,
            "namespaced": i.namespaced,
            "kind": i.kind,
            "verbs": list(i.verbs),
        }
        if i.short_names:
            r["shortNames"] = list(i.short_names)
        if i.categories:
            r["categories"] = list(i.categories)
        resources.append(r)
        for sub in i.subresources:
            g, v, k = _sub_kind(i, sub)
            s: Obj = {
                "name": f"{i.resource}/{sub}",
                "singularName": "",
                "namespaced": i.namespaced,
                "kind": k,
                "verbs": list(SUBRESOURCE_VERBS.get(sub, ("get",))),
            }
            if (g, v) != (i.group, i.version):
                s["group"], s["version"] = g, v
            resources.append(s)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _aggregated_resource(i: ResourceInfo) -> Obj:
    r: Obj = {
        "resource": i.resource,
        "responseKind": {"group": i.group, "version": i.version, "kind": i.kind},
        "scope": "Namespaced" if i.namespaced else "Cluster",
        "singularResource": i.singular_name,
        "verbs": list(i.verbs),
    }
    if i.short_names:
        r["shortNames"] = list(i.short_names)
    if i.categories:
        r["categories"] = list(i.categories)
    subs = []
    for sub in i.subresources:
        g, v, k = _sub_kind(i, sub)
        subs.append(
            {
                "subresource": sub,
                "responseKind": {"group": g, "version": v, "kind": k},
                "verbs": list(SUBRESOURCE_VERBS.get(sub, ("get",))),
            }
        )
    if subs:
        r["subresources"] = subs
    return r


def aggregated(reg: ResourceRegistry, core: bool, content_type: str) -> Obj:
    items = []
    for group, versions in reg.group_versions().items():
        if core != (group == ""):
            continue
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {
                        "version": v,
                        "resources": [
                            _aggregated_resource(i)
                            for i in sorted(reg.resources_in(group, v), key=lambda i: i.resource)
                        ],
                        "freshness": "Current",
                    }
                    for v in versions
                ],
            }
        )
    version = "v2" if content_type == AGGREGATED_V2 else "v2beta1"
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
