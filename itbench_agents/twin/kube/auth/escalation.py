"""RBAC's privilege-escalation prevention: nobody grants what they do not hold.

As the apiserver's RBAC storage does (``pkg/registry/rbac/{role,clusterrole,rolebinding,
clusterrolebinding}/policybased``): creating or updating a Role/ClusterRole needs every permission it
grants (in the Role's namespace; cluster-wide for a ClusterRole) or the ``escalate`` verb on it;
creating or updating a (Cluster)RoleBinding needs every permission of the role it references or the
``bind`` verb on that role. ``system:masters`` is exempt. A ClusterRole with an ``aggregationRule`` needs
cluster-admin rights. The refusal is the apiserver's 403 (``... is attempting to grant RBAC permissions
not currently held:``).

The check runs as a validator of the four RBAC resources (``twin.validators``, called by the REST
layer on create, update and patch); the requesting user is the one :func:`check_request` recorded for
the current request thread.
"""

from __future__ import annotations

import threading
from typing import Any

from ....k8s.kinds import GroupResource
from ..errors import ApiError, not_found
from ..store import Obj
from .rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES, Rbac, rule_allows
from .users import Attributes, UserInfo, is_admin

_local = threading.local()
RBAC_KINDS = {ROLES: "Role", CLUSTER_ROLES: "ClusterRole", ROLE_BINDINGS: "RoleBinding", CLUSTER_ROLE_BINDINGS: "ClusterRoleBinding"}  # fmt: skip


def set_request_user(user: UserInfo | None, namespace: str = "") -> None:
    """Record who the current request thread acts for (and the namespace of its URL)."""
    _local.user = user
    _local.namespace = namespace


def request_user_of_thread() -> UserInfo | None:
    return getattr(_local, "user", None)


def _atoms(rule: Obj) -> list[tuple[Attributes, Obj]]:
    """A rule broken down into single (verb, group, resource, name) / (verb, url) permissions."""
    verbs = [str(v) for v in rule.get("verbs") or []]
    out: list[tuple[Attributes, Obj]] = []
    for url in rule.get("nonResourceURLs") or []:
        for v in verbs:
            out.append((Attributes.non_resource(v, str(url)), {"nonResourceURLs": [url], "verbs": [v]}))
    names = [str(n) for n in rule.get("resourceNames") or []] or [""]
    for g in rule.get("apiGroups") or []:
        for r in rule.get("resources") or []:
            res, _, sub = str(r).partition("/")
            for n in names:
                for v in verbs:
                    atom: Obj = {"apiGroups": [g], "resources": [r], "verbs": [v]}
                    if n:
                        atom["resourceNames"] = [n]
                    attrs = Attributes.resource_attrs(v, res, api_group=str(g), name=n, subresource=sub)
                    out.append((attrs, atom))
    return out


def missing_rules(owner: list[Obj], wanted: list[Obj]) -> list[Obj]:
    """The atomic permissions of ``wanted`` no rule of ``owner`` covers (``validation.Covers``)."""
    missing = []
    for rule in wanted:
        for attrs, atom in _atoms(rule):
            if not any(rule_allows(attrs, o) for o in owner) and atom not in missing:
                missing.append(atom)
    return missing


def compact_string(rule: Obj) -> str:
    """``rbacv1helpers.CompactString``: ``{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}``."""

    def q(values: list[str]) -> str:
        return "[" + " ".join('"' + str(v).replace('"', '\\"') + '"' for v in values) + "]"

    parts = []
    for key, label in (
        ("apiGroups", "APIGroups"),
        ("resources", "Resources"),
        ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"),
        ("verbs", "Verbs"),
    ):
        if rule.get(key):
            parts.append(f"{label}:{q(rule[key])}")
    return "{" + ", ".join(parts) + "}"


def _compact(missing: list[Obj]) -> list[Obj]:
    """Merge the verbs of missing permissions on the same thing (``CompactRules``)."""
    merged: dict[tuple[Any, ...], Obj] = {}
    for m in missing:
        key = tuple(
            tuple(m.get(k) or ()) for k in ("apiGroups", "resources", "resourceNames", "nonResourceURLs")
        )
        if key in merged:
            merged[key]["verbs"] = [*merged[key]["verbs"], *m["verbs"]]
        else:
            merged[key] = {**m, "verbs": list(m["verbs"])}
    return list(merged.values())


def _refuse(gr: GroupResource, name: str, user: UserInfo, missing: list[Obj]) -> ApiError:
    groups = "[" + " ".join(f'"{g}"' for g in user.groups) + "]"
    lines = sorted(compact_string(m) for m in _compact(missing))
    msg = (
        f'{gr.resource}.{gr.group} "{name}" is forbidden: user "{user.username}" (groups={groups}) is attempting '
        "to grant RBAC permissions not currently held:\n" + "\n".join(lines)
    )
    return ApiError(403, "Forbidden", msg, {"name": name, "group": gr.group, "kind": gr.resource})


def _allowed(twin: Any, rbac: Rbac, user: UserInfo, attrs: Attributes) -> bool:
    """RBAC's answer for a user who is not an admin (``check`` returns early for admins)."""
    with twin.lock:
        return rbac.authorize(user, attrs)[0]


def check(twin: Any, gr: GroupResource, obj: Obj, rbac: Rbac) -> list[tuple[str, str, str]]:
    """Validator: raise the 403 when the request's user would grant more than they hold."""
    user = request_user_of_thread()
    if user is None or is_admin(user):
        return []
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    ns = str(meta.get("namespace") or getattr(_local, "namespace", "") or "")
    if gr not in (ROLES, ROLE_BINDINGS):
        ns = ""
    if gr in (ROLES, CLUSTER_ROLES):
        if _allowed(twin, rbac, user, Attributes.resource_attrs("escalate", gr.resource, namespace=ns, api_group=gr.group, name=name)):  # fmt: skip
            return []
        if gr == CLUSTER_ROLES and obj.get("aggregationRule"):
            owner = rbac.rules_for(user, "")[0]
            if missing_rules(owner, [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]):
                raise ApiError(
                    403,
                    "Forbidden",
                    f'clusterroles.rbac.authorization.k8s.io "{name}" is forbidden: must have cluster-admin '
                    "privileges to use the aggregationRule",
                    {"name": name, "group": gr.group, "kind": gr.resource},
                )
            return []
        wanted = [r for r in obj.get("rules") or [] if isinstance(r, dict)]
    else:
        ref = obj.get("roleRef") or {}
        ref_kind, ref_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        ref_gr = ROLES if ref_kind == "Role" else CLUSTER_ROLES
        bind = Attributes.resource_attrs(
            "bind", ref_gr.resource, namespace=ns, api_group=gr.group, name=ref_name
        )
        if _allowed(twin, rbac, user, bind):
            return []
        role = twin.store.get(ref_gr, ns if ref_kind == "Role" else "", ref_name)
        if role is None:
            raise not_found(ref_gr.group, ref_gr.resource, ref_name)
        wanted = [r for r in role.get("rules") or [] if isinstance(r, dict)]
        if ref_kind == "ClusterRole" and role.get("aggregationRule"):
            from .defaults import aggregated_rules

            wanted += [r for r in aggregated_rules(role, twin.store.list(CLUSTER_ROLES)) if r not in wanted]
    with twin.lock:
        owner, url_owner, _ = rbac.rules_for(user, ns)
    missing = missing_rules(owner + url_owner, wanted)
    if missing:
        raise _refuse(gr, name, user, missing)
    return []


def install_checks(twin: Any, rbac: Rbac) -> None:
    """Register :func:`check` (over ``rbac``, the twin's) as a validator of the RBAC resources of ``twin`` (once)."""
    validators = getattr(twin, "validators", None)
    if not isinstance(validators, dict):
        return
    for gr in RBAC_KINDS:
        checks = validators.setdefault(gr, [])
        if not any(getattr(c, "_itbench_escalation", False) for c in checks):

            def validator(obj: Obj, gr: GroupResource = gr) -> list[tuple[str, str, str]]:
                return check(twin, gr, obj, rbac)

            validator._itbench_escalation = True  # type: ignore[attr-defined]
            checks.append(validator)
