"""Who is asking (``UserInfo``) and what they ask for (``Attributes``), as the kube-apiserver sees it.

``request_attributes`` derives the authorization attributes of an HTTP request the way the
apiserver's ``RequestInfoFactory`` does: from the path, the method and the query alone (no knowledge
of which resources exist), so ``/api/v1/namespaces/otel-demo`` is the resource ``namespaces`` named
``otel-demo`` *in the namespace* ``otel-demo``, ``/apis/apps/v1`` is the non-resource path
``/apis/apps/v1``, and a GET of a collection is ``list`` (``watch`` with ``?watch=true``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
SA_PREFIX = "system:serviceaccount:"
SA_GROUPS = "system:serviceaccounts"


@dataclass(frozen=True)
class UserInfo:
    """An authenticated (or anonymous) user: what ``kubectl auth whoami`` prints."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """What authorization depends on (username and groups)."""
        return (self.username, self.groups)

    def as_user_info(self) -> dict[str, object]:
        """The ``authentication.k8s.io/v1 UserInfo`` JSON."""
        out: dict[str, object] = {"username": self.username}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = UserInfo("kubernetes-admin", groups=(MASTERS, AUTHENTICATED))
"""The user of the static admin token (a kubeadm cluster's ``kubernetes-admin``; cluster-admin via
``system:masters``)."""
ANONYMOUS = UserInfo("system:anonymous", groups=(UNAUTHENTICATED,))


def service_account_user(
    namespace: str, name: str, uid: str = "", extra: dict[str, list[str]] | None = None
) -> UserInfo:
    return UserInfo(
        f"{SA_PREFIX}{namespace}:{name}",
        uid,
        (SA_GROUPS, f"{SA_GROUPS}:{namespace}", AUTHENTICATED),
        dict(extra or {}),
    )


def is_admin(user: UserInfo) -> bool:
    """True for members of ``system:masters``, whom the apiserver allows everything before RBAC is asked."""
    return MASTERS in user.groups


@dataclass(frozen=True)
class Attributes:
    """The authorization attributes of one request (``authorizer.Attributes``)."""

    verb: str
    resource_request: bool = True
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @classmethod
    def resource_attrs(
        cls,
        verb: str,
        resource: str,
        *,
        namespace: str = "",
        api_group: str = "",
        name: str = "",
        subresource: str = "",
        api_version: str = "",
    ) -> Attributes:
        return cls(verb, True, "", api_group, api_version, resource, subresource, namespace, name)

    @classmethod
    def non_resource(cls, verb: str, path: str) -> Attributes:
        return cls(verb, False, path)


_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_NAMESPACE_SUBRESOURCES = {"status", "finalize"}


def _exact_name(field_selector: str) -> str:
    """The ``metadata.name`` a field selector requires exactly ("" if none)."""
    for term in field_selector.split(","):
        for op in ("==", "="):
            if op in term:
                key, _, value = term.partition(op)
                if key.strip() == "metadata.name" and not key.endswith("!"):
                    return value.strip()
                break
    return ""


def request_attributes(method: str, path: str, query: Mapping[str, list[str]] | None = None) -> Attributes:
    """The attributes of an HTTP request, derived like the apiserver's ``RequestInfoFactory``."""
    query = query or {}
    parts = [p for p in path.split("/") if p]
    if len(parts) < 3 or parts[0] not in ("api", "apis") or (parts[0] == "apis" and len(parts) < 4):
        return Attributes.non_resource(method.lower(), path or "/")
    rest = parts[1:]
    group = ""
    if parts[0] == "apis":
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    verb = ""
    if rest[0] in ("watch", "proxy"):
        if len(rest) < 2:
            return Attributes.non_resource(method.lower(), path)
        verb, rest = rest[0], rest[1:]
        by_method = False
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
        by_method = True
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 and verb != "proxy" else ""
    if not name and by_method and verb == "get":
        watch = (query.get("watch") or [""])[-1].lower() in ("1", "true")
        verb = "watch" if watch else "list"
        sel = (query.get("fieldSelector") or [""])[-1]
        if sel:
            name = _exact_name(sel)
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb, True, "", group, version, resource, subresource, namespace, name)


def forbidden_message(user: UserInfo, attrs: Attributes, reason: str = "") -> str:
    """The apiserver's 403 message (``responsewriters.Forbidden`` + ``errors.NewForbidden``)."""
    if not attrs.resource_request:
        msg = f'User "{user.username}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        if attrs.namespace:
            msg = (
                f'User "{user.username}" cannot {attrs.verb} resource "{resource}" in API group '
                f'"{attrs.api_group}" in the namespace "{attrs.namespace}"'
            )
        else:
            msg = (
                f'User "{user.username}" cannot {attrs.verb} resource "{resource}" in API group '
                f'"{attrs.api_group}" at the cluster scope'
            )
    if reason:
        msg = f"{msg}: {reason}"
    if not attrs.resource_request or not attrs.resource:
        return f"forbidden: {msg}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    if attrs.name:
        return f'{qualified} "{attrs.name}" is forbidden: {msg}'
    return f"{qualified} is forbidden: {msg}"


def forbidden_details(attrs: Attributes) -> dict[str, str]:
    """``Status.details`` of the 403 (empty strings are omitted, as Go's ``omitempty`` does)."""
    if not attrs.resource_request:
        return {}
    details = {"name": attrs.name, "group": attrs.api_group, "kind": attrs.resource}
    return {k: v for k, v in details.items() if v}
