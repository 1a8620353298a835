"""Authentication and RBAC authorization of the twin's Kubernetes API, as a kube-apiserver does them.

Public interface::

    user = authenticate(twin, req.headers)       # UserInfo; ApiError 401 for a token the twin rejects
    allowed, reason = authorize(twin, user, request_attributes(req.method, req.path, req.query))
    is_admin(user)                                # member of system:masters (allowed everything)
    request_user(twin, req.headers)               # authenticate + Impersonate-* headers (kubectl --as)
    check_request(twin, req.method, req.path, req.query, req.headers)  # both; raises 401 / 403

- Tokens: the twin's admin token (``twin.admin_token``; by default the static ``itbench-twin``) →
  ``kubernetes-admin`` (``system:masters``); ServiceAccount tokens minted by
  ``POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`` (TokenRequest) →
  ``system:serviceaccount:{ns}:{name}``; anything else (incl. ``itbench-twin`` once the twin has
  another admin token) → 401 ``Unauthorized``.
- No token: ``system:anonymous`` (a real cluster: ``/healthz``, ``/livez``, ``/readyz``, ``/version``
  only) when the twin has its own admin token or its anonymous mode is ``"rbac"``; otherwise (mode
  ``"admin"``, the default, with the default token, so tests and in-process callers that send none
  keep working) a request without a token acts as ``kubernetes-admin``.
  ``set_anonymous_mode(twin, "rbac")`` or ``ITBENCH_TWIN_ANONYMOUS=rbac`` switch.
- Authorization: RBAC over the store's Role/ClusterRole/RoleBinding/ClusterRoleBinding objects, with
  the bootstrap ClusterRoles and ClusterRoleBindings installed on first use (``install(twin)``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import ApiError, forbidden
from . import wire  # noqa: F401  (registers the protobuf field tables of the auth and RBAC kinds)
from .defaults import install_defaults
from .escalation import install_checks, set_request_user
from .rbac import Rbac, rule_allows
from .tokens import ADMIN_TOKEN, InvalidToken, TokenAuthority
from .users import (
    ADMIN,
    ANONYMOUS,
    AUTHENTICATED,
    SA_GROUPS,
    SA_PREFIX,
    UNAUTHENTICATED,
    Attributes,
    UserInfo,
    forbidden_details,
    forbidden_message,
    is_admin,
    request_attributes,
    service_account_user,
)

ANONYMOUS_MODES = ("admin", "rbac")
DEFAULT_ANONYMOUS_MODE = "admin"


class AuthState:
    """The authentication and authorization state of one twin (``auth_state(twin)``)."""

    def __init__(self, twin: Any) -> None:
        self.twin = twin
        self.tokens = TokenAuthority()
        self.rbac = Rbac(twin.store)
        mode = os.environ.get("ITBENCH_TWIN_ANONYMOUS", "") or DEFAULT_ANONYMOUS_MODE
        self.anonymous = mode if mode in ANONYMOUS_MODES else DEFAULT_ANONYMOUS_MODE
        """``"rbac"``: a request without a token is ``system:anonymous``; ``"admin"``: ``kubernetes-admin``."""


def auth_state(twin: Any) -> AuthState:
    """The (cached) auth state of ``twin``; installs the bootstrap RBAC policy into its store once."""
    state = getattr(twin, "_kube_auth", None)
    if state is None:
        with twin.lock:
            state = getattr(twin, "_kube_auth", None)
            if state is None:
                install_defaults(twin.store, getattr(twin, "created_at", twin.now()))
                state = AuthState(twin)
                install_checks(twin, state.rbac)
                twin._kube_auth = state
    return state  # type: ignore[no-any-return]


def install(twin: Any) -> AuthState:
    """Set up authentication/authorization for ``twin`` (idempotent; the REST server calls it)."""
    return auth_state(twin)


def set_anonymous_mode(twin: Any, mode: str) -> None:
    """``"rbac"`` (a real cluster's anonymous user) or ``"admin"`` (no token = ``kubernetes-admin``)."""
    if mode not in ANONYMOUS_MODES:
        raise ValueError(f"anonymous mode must be one of {ANONYMOUS_MODES}, got {mode!r}")
    auth_state(twin).anonymous = mode


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The bearer token of a request (None when there is none; headers may be lower-cased or not)."""
    value = headers.get("authorization")
    if value is None:
        value = headers.get("Authorization")
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def authenticate(twin: Any, headers: Mapping[str, str]) -> UserInfo:
    """The user a request's headers authenticate; ``ApiError`` 401 for a token the twin rejects."""
    token = bearer_token(headers)
    # a twin the harness gave its own admin token (every episode) trusts no other: the static
    # token and token-less requests stop being admin there
    admin_token = getattr(twin, "admin_token", ADMIN_TOKEN)
    if token is None:
        state = auth_state(twin)
        return ANONYMOUS if state.anonymous == "rbac" or admin_token != ADMIN_TOKEN else ADMIN
    if token == admin_token:
        return ADMIN
    state = auth_state(twin)
    with twin.lock:
        try:
            return state.tokens.user_for(token, twin.store, twin.now())
        except InvalidToken as e:
            raise unauthorized() from e


def _forbidden(user: UserInfo, attrs: Attributes, reason: str = "") -> ApiError:
    err = forbidden(forbidden_message(user, attrs, reason))
    err.details = forbidden_details(attrs) or None
    return err


def impersonate(twin: Any, user: UserInfo, headers: Mapping[str, str | list[str]]) -> UserInfo:
    """Apply ``Impersonate-User`` / ``-Group`` / ``-Uid`` / ``-Extra-*`` headers (``kubectl --as``), each
    allowed only with the ``impersonate`` verb on users / groups / serviceaccounts / uids / userextras."""
    lower = {k.lower(): v for k, v in headers.items()}
    if not any(k.startswith("impersonate-") for k in lower):
        return user

    def values(key: str) -> list[str]:
        v = lower.get(key)
        if v is None:
            return []
        return [x.strip() for x in (v if isinstance(v, list) else str(v).split(",")) if x.strip()]

    names = values("impersonate-user")
    groups = values("impersonate-group")
    uids = values("impersonate-uid")
    extra = {k[len("impersonate-extra-") :]: values(k) for k in lower if k.startswith("impersonate-extra-")}
    if not names:
        raise ApiError(
            400,
            "BadRequest",
            "requested impersonation of groups, uid or extra without impersonating a user",
        )
    username = names[0]
    checks: list[Attributes] = []
    sa = username.startswith(SA_PREFIX) and username.count(":") == 3
    if sa:
        _, _, sa_ns, sa_name = username.split(":")
        checks.append(
            Attributes.resource_attrs("impersonate", "serviceaccounts", namespace=sa_ns, name=sa_name)
        )
    else:
        checks.append(Attributes.resource_attrs("impersonate", "users", name=username))
    checks += [Attributes.resource_attrs("impersonate", "groups", name=g) for g in groups]
    checks += [
        Attributes.resource_attrs("impersonate", "uids", api_group="authentication.k8s.io", name=u)
        for u in uids
    ]
    for key, vals in extra.items():
        checks += [
            Attributes.resource_attrs(
                "impersonate", "userextras", api_group="authentication.k8s.io", subresource=key, name=v
            )
            for v in vals
        ]
    for attrs in checks:
        allowed, reason = authorize(twin, user, attrs)
        if not allowed:
            raise _forbidden(user, attrs, reason)
    all_groups = list(groups)
    if sa:
        for g in (SA_GROUPS, f"{SA_GROUPS}:{username.split(':')[2]}"):
            if g not in all_groups:
                all_groups.append(g)
    if username != ANONYMOUS.username and not {AUTHENTICATED, UNAUTHENTICATED} & set(all_groups):
        all_groups.append(AUTHENTICATED)
    return UserInfo(username, uids[0] if uids else "", tuple(all_groups), extra)


def request_user(twin: Any, headers: Mapping[str, str]) -> UserInfo:
    """The user a request acts as: :func:`authenticate`, then impersonation headers."""
    return impersonate(twin, authenticate(twin, headers), headers)


def authorize(twin: Any, user: UserInfo, attrs: Attributes) -> tuple[bool, str]:
    """(allowed, reason) for ``user`` doing ``attrs``: ``system:masters`` first, then RBAC."""
    if is_admin(user):
        return True, ""
    state = auth_state(twin)
    with twin.lock:
        return state.rbac.authorize(user, attrs)


def check_request(
    twin: Any, method: str, path: str, query: Mapping[str, list[str]], headers: Mapping[str, str]
) -> UserInfo:
    """Authenticate and authorize one HTTP request; raises the apiserver's 401 / 403 ``ApiError``."""
    set_request_user(None)
    user = request_user(twin, headers)
    set_request_user(user)  # for the privilege-escalation check of RBAC writes (escalation.py)
    if is_admin(user):
        return user
    attrs = request_attributes(method, path, query)
    set_request_user(user, attrs.namespace)
    allowed, reason = authorize(twin, user, attrs)
    if not allowed:
        raise _forbidden(user, attrs, reason)
    return user


__all__ = [
    "ADMIN",
    "ADMIN_TOKEN",
    "ANONYMOUS",
    "ANONYMOUS_MODES",
    "DEFAULT_ANONYMOUS_MODE",
    "Attributes",
    "AuthState",
    "UserInfo",
    "auth_state",
    "authenticate",
    "authorize",
    "bearer_token",
    "check_request",
    "forbidden_message",
    "impersonate",
    "install",
    "is_admin",
    "request_attributes",
    "request_user",
    "rule_allows",
    "service_account_user",
    "set_anonymous_mode",
    "unauthorized",
]
