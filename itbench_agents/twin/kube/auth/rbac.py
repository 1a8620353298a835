"""RBAC evaluation over the Role / ClusterRole / RoleBinding / ClusterRoleBinding objects in the store.

Semantics follow ``plugin/pkg/auth/authorizer/rbac``: ClusterRoleBindings are visited first, then the
RoleBindings of the request's namespace; a rule allows when its verbs, API groups, resources
(``pods/log``, ``*/scale``, ``*``), resource names and non-resource URLs (``/apis/*``) match. RBAC only
allows; a binding to a missing role contributes nothing but an ``RBAC: ... not found`` reason.
ClusterRoles with an ``aggregationRule`` get the rules of the ClusterRoles their selectors pick.

Bindings are indexed by subject and the index is rebuilt only after an RBAC object changed (store
listener); decisions are memoised per (user, attributes) between such changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....k8s.kinds import GroupResource
from ..store import ChangeEvent, Obj
from .defaults import RBAC, aggregated_rules
from .users import SA_PREFIX, Attributes, UserInfo

ROLES = GroupResource(RBAC, "roles")
CLUSTER_ROLES = GroupResource(RBAC, "clusterroles")
ROLE_BINDINGS = GroupResource(RBAC, "rolebindings")
CLUSTER_ROLE_BINDINGS = GroupResource(RBAC, "clusterrolebindings")

SubjectKey = tuple[str, str]  # ("User" | "Group", name); ServiceAccounts become their user name


@dataclass(frozen=True)
class Grant:
    """One binding's subject, as it applies to a user: where the rules come from."""

    binding_kind: str  # ClusterRoleBinding | RoleBinding
    binding_name: str
    binding_namespace: str
    role_kind: str
    role_name: str
    subject: str  # describeSubject()


def _subject_key(subject: Obj, binding_ns: str) -> SubjectKey | None:
    kind = subject.get("kind")
    name = str(subject.get("name") or "")
    if kind == "User":
        return ("User", name)
    if kind == "Group":
        return ("Group", name)
    if kind == "ServiceAccount":
        ns = str(subject.get("namespace") or binding_ns)
        return ("User", f"{SA_PREFIX}{ns}:{name}")
    return None


def _describe_subject(subject: Obj, binding_ns: str) -> str:
    kind = str(subject.get("kind") or "")
    name = str(subject.get("name") or "")
    if kind == "ServiceAccount":
        ns = str(subject.get("namespace") or binding_ns)
        return f'{kind} "{name}/{ns}"'
    return f'{kind} "{name}"'


def _has(values: Any, want: str) -> bool:
    return isinstance(values, list) and (want in values or "*" in values)


def rule_allows(attrs: Attributes, rule: Obj) -> bool:
    """``RuleAllows``: one PolicyRule against request attributes."""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        for url in rule.get("nonResourceURLs") or []:
            if url == "*" or url == attrs.path or (url.endswith("*") and attrs.path.startswith(url[:-1])):
                return True
        return False
    if not _has(rule.get("apiGroups"), attrs.api_group):
        return False
    combined = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    resources = rule.get("resources") or []
    if not any(
        r == "*" or r == combined or (attrs.subresource and r == f"*/{attrs.subresource}") for r in resources
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def user_keys(user: UserInfo) -> list[SubjectKey]:
    return [("User", user.username), *(("Group", g) for g in user.groups)]


class Rbac:
    """The RBAC authorizer of one store."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.generation = 0
        self._built = -1
        self._cluster: dict[SubjectKey, list[Grant]] = {}
        self._namespaced: dict[str, dict[SubjectKey, list[Grant]]] = {}
        self._rules: dict[tuple[str, str, str], tuple[list[Obj], str]] = {}
        self._decisions: dict[tuple[Any, ...], tuple[bool, str]] = {}
        store.subscribe(self._on_change)

    def _on_change(self, ev: ChangeEvent) -> None:
        if ev.gr.group == RBAC:
            self.generation += 1

    # ------------------------------------------------------------------ index
    def _index(self) -> None:
        if self._built == self.generation:
            return
        cluster: dict[SubjectKey, list[Grant]] = {}
        namespaced: dict[str, dict[SubjectKey, list[Grant]]] = {}
        for gr, target in ((CLUSTER_ROLE_BINDINGS, None), (ROLE_BINDINGS, namespaced)):
            for b in self.store.list(gr):
                meta = b.get("metadata") or {}
                ns = str(meta.get("namespace") or "")
                ref = b.get("roleRef") or {}
                kind = "RoleBinding" if target is not None else "ClusterRoleBinding"
                index = cluster if target is None else target.setdefault(ns, {})
                for s in b.get("subjects") or []:
                    if not isinstance(s, dict):
                        continue
                    key = _subject_key(s, ns)
                    if key is None:
                        continue
                    grant = Grant(
                        kind,
                        str(meta.get("name") or ""),
                        ns,
                        str(ref.get("kind") or ""),
                        str(ref.get("name") or ""),
                        _describe_subject(s, ns),
                    )
                    index.setdefault(key, []).append(grant)
        self._cluster, self._namespaced = cluster, namespaced
        self._rules = {}
        self._decisions = {}
        self._built = self.generation

    def rules_of(self, grant: Grant) -> tuple[list[Obj], str]:
        """The rules a grant's role gives, and an error text when the role does not exist."""
        key = (grant.role_kind, grant.binding_namespace if grant.role_kind == "Role" else "", grant.role_name)
        hit = self._rules.get(key)
        if hit is not None:
            return hit
        if grant.role_kind == "Role":
            role = self.store.get(ROLES, grant.binding_namespace, grant.role_name)
            label = f'role.rbac.authorization.k8s.io "{grant.role_name}" not found'
        elif grant.role_kind == "ClusterRole":
            role = self.store.get(CLUSTER_ROLES, "", grant.role_name)
            label = f'clusterrole.rbac.authorization.k8s.io "{grant.role_name}" not found'
        else:
            role, label = None, f'unknown roleRef kind "{grant.role_kind}"'
        if role is None:
            result: tuple[list[Obj], str] = ([], label)
        else:
            rules = [r for r in role.get("rules") or [] if isinstance(r, dict)]
            if grant.role_kind == "ClusterRole" and role.get("aggregationRule"):
                for r in aggregated_rules(role, self.store.list(CLUSTER_ROLES)):
                    if r not in rules:
                        rules.append(r)
            result = (rules, "")
        self._rules[key] = result
        return result

    def grants(self, user: UserInfo, namespace: str) -> list[Grant]:
        """The grants that apply to ``user`` for a request in ``namespace`` (cluster ones first)."""
        self._index()
        keys = user_keys(user)
        out: list[Grant] = []
        for k in keys:
            out.extend(self._cluster.get(k, ()))
        if namespace:
            ns_index = self._namespaced.get(namespace) or {}
            for k in keys:
                out.extend(ns_index.get(k, ()))
        return sorted(
            set(out), key=lambda g: (g.binding_kind != "ClusterRoleBinding", g.binding_name, g.subject)
        )

    # ------------------------------------------------------------------ decisions
    def authorize(self, user: UserInfo, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason): ``RBAC: allowed by ...`` or the errors met while looking (often "")."""
        self._index()
        ckey = (user.key, attrs)
        hit = self._decisions.get(ckey)
        if hit is not None:
            return hit
        errors: list[str] = []
        decision = (False, "")
        for g in self.grants(user, attrs.namespace if attrs.resource_request else ""):
            rules, err = self.rules_of(g)
            if err:
                errors.append(err)
                continue
            if any(rule_allows(attrs, r) for r in rules):
                role = f'{g.role_kind} "{g.role_name}"'
                if g.binding_kind == "ClusterRoleBinding":
                    source = f'ClusterRoleBinding "{g.binding_name}" of {role} to {g.subject}'
                else:
                    source = f'RoleBinding "{g.binding_name}/{g.binding_namespace}" of {role} to {g.subject}'
                decision = (True, f"RBAC: allowed by {source}")
                break
        else:
            if errors:
                decision = (False, "RBAC: " + (errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"))
        if len(self._decisions) > 50_000:
            self._decisions.clear()
        self._decisions[ckey] = decision
        return decision

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[Obj], str]:
        """(resourceRules, nonResourceRules, evaluationError) for a SelfSubjectRulesReview."""
        resource_rules: list[Obj] = []
        url_rules: list[Obj] = []
        errors: list[str] = []
        for g in self.grants(user, namespace):
            rules, err = self.rules_of(g)
            if err:
                errors.append(err)
            for r in rules:
                if r.get("nonResourceURLs"):
                    nr = {"verbs": list(r.get("verbs") or []), "nonResourceURLs": list(r["nonResourceURLs"])}
                    if nr not in url_rules:
                        url_rules.append(nr)
                else:
                    rr: Obj = {"verbs": list(r.get("verbs") or [])}
                    for k in ("apiGroups", "resources", "resourceNames"):
                        if r.get(k):
                            rr[k] = list(r[k])
                    if rr not in resource_rules:
                        resource_rules.append(rr)
        return resource_rules, url_rules, "; ".join(errors)
