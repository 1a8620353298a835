"""The resource types the twin's API server knows: built-in kinds plus CRD-defined ones.

A :class:`ResourceRegistry` belongs to one twin (``registry_for(twin)``) and follows its store:
creating a ``CustomResourceDefinition`` adds the custom resource, deleting it removes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...k8s.kinds import BUILTIN, GroupResource, ResourceInfo
from .errors import ApiError
from .store import ChangeEvent, Obj

CRD_GR = GroupResource("apiextensions.k8s.io", "customresourcedefinitions")


# The subresource → (group, version, kind) a subresource speaks, when not the parent's kind.
SUBRESOURCE_KINDS: dict[str, tuple[str, str, str]] = {
    "scale": ("autoscaling", "v1", "Scale"),
    "eviction": ("policy", "v1", "Eviction"),
    "binding": ("", "v1", "Binding"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
    "exec": ("", "v1", "PodExecOptions"),
    "attach": ("", "v1", "PodAttachOptions"),
    "portforward": ("", "v1", "PodPortForwardOptions"),
}

# Group order for discovery (as a real apiserver lists them).
GROUP_ORDER = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "metrics.k8s.io",
)


def no_match(kind: str, api_version: str) -> ApiError:
    return ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')


class ResourceRegistry:
    """Lookup of served resources by (group, version, resource), by kind and by short name."""

    def __init__(self, builtin: Iterable[ResourceInfo] = BUILTIN) -> None:
        self._builtin = list(builtin)
        self._custom: dict[str, list[ResourceInfo]] = {}  # CRD name → its served versions
        self.generation = 0
        """Grows whenever the set of served resources changes (caches key on it)."""
        self._rebuild()

    # ------------------------------------------------------------------ index
    def _rebuild(self) -> None:
        self.generation += 1
        infos = list(self._builtin)
        for crd_infos in self._custom.values():
            infos.extend(crd_infos)
        self._all = infos
        self._by_gvr = {(i.group, i.version, i.resource): i for i in infos}
        self._by_gvk: dict[tuple[str, str, str], ResourceInfo] = {}
        for i in infos:
            self._by_gvk.setdefault((i.group, i.version, i.kind), i)

    def all(self) -> list[ResourceInfo]:
        return list(self._all)

    def group_versions(self) -> dict[str, list[str]]:
        """group → served versions, preferred first."""
        out: dict[str, list[str]] = {}
        for i in self._all:
            vs = out.setdefault(i.group, [])
            if i.version not in vs:
                vs.append(i.version)
        for g, vs in out.items():
            out[g] = sorted(vs, key=version_priority)
        order = {g: n for n, g in enumerate(GROUP_ORDER)}
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def resources_in(self, group: str, version: str) -> list[ResourceInfo]:
        return [i for i in self._all if i.group == group and i.version == version]

    # ------------------------------------------------------------------ lookups
    def get(self, group: str, version: str, resource: str) -> ResourceInfo | None:
        return self._by_gvr.get((group, version, resource))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceInfo | None:
        return self._by_gvk.get((group, version, kind))

    def by_short_name(self, name: str) -> ResourceInfo | None:
        name = name.lower()
        for i in self._all:
            if name in i.short_names or name in (i.resource, i.singular_name, i.kind.lower()):
                return i
        return None

    def preferred(self, gr: GroupResource) -> ResourceInfo | None:
        cands = [i for i in self._all if i.gr == gr]
        if not cands:
            return None
        return sorted(cands, key=lambda i: version_priority(i.version))[0]

    def for_object(self, obj: Obj) -> ResourceInfo:
        """The resource an object with ``apiVersion``/``kind`` belongs to (404 'no matches for kind')."""
        api_version = str(obj.get("apiVersion") or "")
        kind = str(obj.get("kind") or "")
        group, _, version = api_version.rpartition("/")
        info = self._by_gvk.get((group, version, kind))
        if info is None:
            raise no_match(kind, api_version)
        return info

    # ------------------------------------------------------------------ CRDs
    def on_change(self, ev: ChangeEvent) -> None:
        """Store listener: keep custom resources in step with CRDs."""
        if ev.gr != CRD_GR:
            return
        name = ev.name
        if ev.type == "DELETED" or ev.obj.get("metadata", {}).get("deletionTimestamp"):
            if self._custom.pop(name, None) is not None:
                self._rebuild()
            return
        infos = infos_from_crd(ev.obj)
        if infos != self._custom.get(name):
            self._custom[name] = infos
            self._rebuild()

    def load_crds(self, crds: Iterable[Obj]) -> None:
        for crd in crds:
            self._custom[crd["metadata"]["name"]] = infos_from_crd(crd)
        self._rebuild()


def infos_from_crd(crd: Obj) -> list[ResourceInfo]:
    spec = crd.get("spec", {}) or {}
    names = spec.get("names", {}) or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    kind = str(names.get("kind", ""))
    out = []
    for v in spec.get("versions", []) or []:
        if not v.get("served", True):
            continue
        subs = tuple(sorted(k for k in (v.get("subresources") or {}) if k in ("status", "scale")))
        out.append(
            ResourceInfo(
                group=group,
                version=str(v.get("name", "")),
                resource=plural,
                kind=kind,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subs,
                singular=str(names.get("singular") or kind.lower()),
                list_kind=str(names.get("listKind") or f"{kind}List"),
                model=None,
                crd=crd,
            )
        )
    return out


def version_priority(v: str) -> tuple[int, int, int]:
    """Kubernetes' version ordering: GA > beta > alpha, then higher numbers first."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)


def registry_for(twin: Any) -> ResourceRegistry:
    """The (cached) registry of ``twin``; subscribes to its store so CRDs come and go."""
    reg = getattr(twin, "_resource_registry", None)
    if reg is None:
        reg = ResourceRegistry()
        reg.load_crds(twin.store.list(CRD_GR))
        twin.store.subscribe(reg.on_change)
        twin._resource_registry = reg
    return reg  # type: ignore[no-any-return]
