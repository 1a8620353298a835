"""Which requests a Kyverno rule selects: ``match`` / ``exclude`` with ``any`` / ``all`` resource
filters (kinds incl. ``group/version/Kind`` and subresources, names, namespaces, label and
namespace selectors, annotations, operations, subjects, roles, clusterRoles)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .values import wildcard_match


@dataclass
class Request:
    """What match/exclude look at: the resource, the operation and who asks."""

    resource: dict[str, Any]
    operation: str = "CREATE"
    namespace_labels: dict[str, str] = field(default_factory=dict)
    username: str = ""
    groups: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    cluster_roles: list[str] = field(default_factory=list)
    subresource: str = ""

    @property
    def kind(self) -> str:
        return str(self.resource.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.resource.get("apiVersion", ""))

    @property
    def name(self) -> str:
        meta = self.resource.get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "")

    @property
    def namespace(self) -> str:
        meta = self.resource.get("metadata") or {}
        if self.kind == "Namespace":
            return str(meta.get("name", ""))
        return str(meta.get("namespace", ""))


def rule_selects(rule: dict[str, Any], req: Request) -> bool:
    """The rule's ``match`` selects the request and its ``exclude`` does not."""
    match = rule.get("match") or {}
    if not _block(match, req, excluding=False):
        return False
    exclude = rule.get("exclude")
    return not (exclude and _block(exclude, req, excluding=True))


def _block(block: dict[str, Any], req: Request, excluding: bool) -> bool:
    if block.get("any"):
        return any(_filter(f, req) for f in block["any"])
    if block.get("all"):
        return all(_filter(f, req) for f in block["all"])
    if not any(block.get(k) for k in ("resources", "subjects", "roles", "clusterRoles")):
        return not excluding  # an empty match selects nothing useful; an empty exclude excludes nothing
    return _filter(block, req)


def _filter(f: dict[str, Any], req: Request) -> bool:
    res = f.get("resources") or {}
    if res and not _resources(res, req):
        return False
    if f.get("subjects") and not any(_subject(s, req) for s in f["subjects"]):
        return False
    if f.get("roles") and not set(f["roles"]) & set(req.roles):
        return False
    return not (f.get("clusterRoles") and not set(f["clusterRoles"]) & set(req.cluster_roles))


def _resources(res: dict[str, Any], req: Request) -> bool:
    kinds = res.get("kinds") or []
    if kinds and not any(kind_matches(k, req) for k in kinds):
        return False
    names = list(res.get("names") or []) + ([res["name"]] if res.get("name") else [])
    if names and not any(wildcard_match(n, req.name) for n in names):
        return False
    namespaces = res.get("namespaces") or []
    if namespaces and not any(wildcard_match(n, req.namespace) for n in namespaces):
        return False
    ops = res.get("operations") or []
    if ops and req.operation not in ops:
        return False
    annotations = res.get("annotations") or {}
    have = (req.resource.get("metadata") or {}).get("annotations") or {}
    for k, v in annotations.items():
        if not any(wildcard_match(k, hk) and wildcard_match(str(v), str(hv)) for hk, hv in have.items()):
            return False
    selector = res.get("selector")
    labels = (req.resource.get("metadata") or {}).get("labels") or {}
    if selector is not None and not label_selector_matches(selector, labels):
        return False
    ns_selector = res.get("namespaceSelector")
    if ns_selector is not None:
        ns_labels = req.namespace_labels if req.kind != "Namespace" else labels
        if not label_selector_matches(ns_selector, ns_labels):
            return False
    return True


def kind_matches(pattern: str, req: Request) -> bool:
    """``Pod``, ``v1/Pod``, ``apps/v1/Deployment``, ``*``, ``Pod/exec``, ``*/scale``."""
    return _kind_matches(pattern, req.api_version, req.kind, req.subresource)


@lru_cache(maxsize=8192)
def _kind_matches(pattern: str, api_version: str, kind: str, subresource: str) -> bool:
    group, _, version = api_version.rpartition("/")
    parts = pattern.split("/")
    sub = ""
    # a trailing lower-case part names a subresource: Pod/exec, apps/v1/Deployment/scale
    if (
        len(parts) >= 2
        and parts[-1][:1].islower()
        and parts[-1] not in ("v1",)
        and not parts[-1].startswith("v")
    ):
        sub = parts.pop()
    if sub != subresource and not (sub and subresource and wildcard_match(sub, subresource)):
        return False
    if len(parts) == 1:
        return wildcard_match(parts[0], kind)
    if len(parts) == 2:
        return wildcard_match(parts[0], version) and wildcard_match(parts[1], kind)
    return (
        wildcard_match(parts[0], group)
        and wildcard_match(parts[1], version)
        and wildcard_match(parts[2], kind)
    )


def label_selector_matches(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    for k, v in (selector.get("matchLabels") or {}).items():
        if not any(wildcard_match(k, lk) and wildcard_match(str(v), str(lv)) for lk, lv in labels.items()):
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _subject(s: dict[str, Any], req: Request) -> bool:
    kind, name = s.get("kind"), str(s.get("name", ""))
    if kind == "User":
        return wildcard_match(name, req.username)
    if kind == "Group":
        return any(wildcard_match(name, g) for g in req.groups)
    if kind == "ServiceAccount":
        return req.username == f"system:serviceaccount:{s.get('namespace', '')}:{name}"
    return False
