"""The review APIs and TokenRequest, as the kube-apiserver serves them.

- ``authorization.k8s.io/v1``: ``SubjectAccessReview`` (cluster), ``LocalSubjectAccessReview``
  (namespaced), ``SelfSubjectAccessReview`` (``kubectl auth can-i``), ``SelfSubjectRulesReview``
  (``kubectl auth can-i --list``);
- ``authentication.k8s.io/v1``: ``SelfSubjectReview`` (``kubectl auth whoami``), ``TokenReview``;
- ``POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`` (``TokenRequest``,
  ``kubectl create token``).

Every one is create-only (POST); the caller must be allowed ``create`` on it, which the REST layer
checks before calling :func:`serve` like for any other resource.
"""

from __future__ import annotations

from typing import Any

from ....k8s.kinds import GroupResource
from ....k8s.times import rfc3339
from ...httpserver import Request, Response
from ..errors import bad_request, invalid, method_not_allowed, not_found
from ..store import Obj
from . import auth_state, authorize, is_admin, request_user
from .tokens import API_AUDIENCES, DEFAULT_EXPIRATION_S, MAX_EXPIRATION_S, MIN_EXPIRATION_S, InvalidToken
from .users import Attributes, UserInfo

AUTHZ = "authorization.k8s.io"
AUTHN = "authentication.k8s.io"
GROUPS = (AUTHZ, AUTHN)
SERVICE_ACCOUNTS = GroupResource("", "serviceaccounts")

# the privileged-group authorizer's rules (what a system:masters member may do, before RBAC)
_MASTERS_RULES = (
    [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
)


def handles(group: str, resource: str, sub: str | None) -> bool:
    """True for the requests :func:`serve` answers."""
    return group in GROUPS or (group == "" and resource == "serviceaccounts" and sub == "token")


def _body(api: Any, req: Request, kind: str, api_version: str) -> Obj:
    body = api._json_body(req)
    if not isinstance(body, dict):
        raise bad_request(f"the body must be a {kind} object")
    if body.get("kind") and body["kind"] != kind:
        raise bad_request(
            f'{body["kind"]} in version "{body.get("apiVersion")}" cannot be handled as a {kind}: '
            f"the kind of the object ({body['kind']}) does not match the resource ({kind})"
        )
    body["kind"], body["apiVersion"] = kind, api_version
    if not isinstance(body.get("metadata"), dict):
        body["metadata"] = {}
    if kind == "SelfSubjectReview":  # the kind has no spec
        body.pop("spec", None)
    elif not isinstance(body.get("spec"), dict):
        body["spec"] = {}
    return body


def serve(
    api: Any, req: Request, info: Any, namespace: str | None, name: str | None, sub: str | None
) -> Response:
    """Answer a review or TokenRequest (``info`` is the ResourceInfo of the URL)."""
    if req.method != "POST" or (name is not None and sub is None):
        raise method_not_allowed()
    if info.namespaced and not namespace:  # only list/watch are served across namespaces
        raise method_not_allowed()
    twin = api.twin
    user = request_user(twin, req.headers)
    if info.resource == "serviceaccounts":
        return _token_request(api, req, namespace or "", name or "")
    kind, gv = info.kind, info.api_version
    body = _body(api, req, kind, gv)
    body["metadata"].setdefault("creationTimestamp", None)
    spec = body.get("spec") or {}
    if info.resource == "selfsubjectreviews":
        body["status"] = {"userInfo": user.as_user_info()}
        return Response.json(body, 201)
    if info.resource == "tokenreviews":
        return Response.json(_token_review(twin, body), 201)
    if info.resource == "selfsubjectrulesreviews":
        ns = str(spec.get("namespace") or "")
        if not ns:
            raise bad_request("no namespace on request")
        body["status"] = rules_review(twin, user, ns)
        return Response.json(body, 201)
    # access reviews
    if info.resource == "selfsubjectaccessreviews":
        subject = user
    else:
        groups = spec.get("groups") or []
        if not spec.get("user") and not groups:
            raise invalid(
                kind,
                "",
                [
                    (
                        "spec.user",
                        "FieldValueInvalid",
                        'Invalid value: "": at least one of user or group must be specified',
                    )
                ],
                AUTHZ,
            )
        raw_extra = spec.get("extra")
        extra: dict[str, list[str]] = {}
        if isinstance(raw_extra, dict):
            extra = {str(k): [str(x) for x in (v or [])] for k, v in raw_extra.items()}
        subject = UserInfo(
            str(spec.get("user") or ""), str(spec.get("uid") or ""), tuple(str(g) for g in groups), extra
        )
    attrs = _review_attributes(
        kind, spec, namespace if info.resource == "localsubjectaccessreviews" else None
    )
    allowed, reason = authorize(twin, subject, attrs)
    status: Obj = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    body["status"] = status
    if info.resource == "localsubjectaccessreviews":
        body["metadata"]["namespace"] = namespace or ""
    return Response.json(body, 201)


def _review_attributes(kind: str, spec: Obj, url_namespace: str | None) -> Attributes:
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (ra is None) == (nra is None):
        raise invalid(
            kind,
            "",
            [
                (
                    "spec.resourceAttributes",
                    "FieldValueRequired",
                    "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )
            ],
            AUTHZ,
        )
    if nra is not None:
        if url_namespace is not None:
            raise invalid(
                kind,
                "",
                [
                    (
                        "spec.nonResourceAttributes",
                        "FieldValueForbidden",
                        "Forbidden: disallowed on this kind of request",
                    )
                ],
                AUTHZ,
            )
        nra = nra if isinstance(nra, dict) else {}
        return Attributes.non_resource(str(nra.get("verb") or ""), str(nra.get("path") or ""))
    ra = ra if isinstance(ra, dict) else {}
    ns = str(ra.get("namespace") or "")
    if url_namespace is not None and ns != url_namespace:
        raise invalid(
            kind,
            "",
            [
                (
                    "spec.resourceAttributes.namespace",
                    "FieldValueInvalid",
                    f'Invalid value: "{ns}": must match metadata.namespace',
                )
            ],
            AUTHZ,
        )
    return Attributes.resource_attrs(
        str(ra.get("verb") or ""),
        str(ra.get("resource") or ""),
        namespace=ns,
        api_group=str(ra.get("group") or ""),
        name=str(ra.get("name") or ""),
        subresource=str(ra.get("subresource") or ""),
        api_version=str(ra.get("version") or ""),
    )


def rules_review(twin: Any, user: UserInfo, namespace: str) -> Obj:
    """``SubjectRulesReviewStatus`` of ``user`` in ``namespace``."""
    state = auth_state(twin)
    with twin.lock:
        resource_rules, url_rules, error = state.rbac.rules_for(user, namespace)
    if is_admin(user):
        resource_rules = _MASTERS_RULES[0] + [r for r in resource_rules if r not in _MASTERS_RULES[0]]
        url_rules = _MASTERS_RULES[1] + [r for r in url_rules if r not in _MASTERS_RULES[1]]
    status: Obj = {"resourceRules": resource_rules, "nonResourceRules": url_rules, "incomplete": False}
    if error:
        status["evaluationError"] = error
    return status


def _token_review(twin: Any, body: Obj) -> Obj:
    token = str(body["spec"].get("token") or "")
    audiences = tuple(body["spec"].get("audiences") or API_AUDIENCES)
    state = auth_state(twin)
    status: Obj
    try:
        with twin.lock:
            user = state.tokens.user_for(token, twin.store, twin.now(), audiences)
        status = {"authenticated": True, "user": user.as_user_info(), "audiences": list(audiences)}
    except InvalidToken as e:
        status = {"user": {}, "error": f"[invalid bearer token, {e}]"}
    body["status"] = status
    return body


def _token_request(api: Any, req: Request, namespace: str, name: str) -> Response:
    twin = api.twin
    body = _body(api, req, "TokenRequest", f"{AUTHN}/v1")
    spec = body["spec"]
    sa = twin.store.get(SERVICE_ACCOUNTS, namespace, name)
    if sa is None:
        raise not_found("", "serviceaccounts", name)
    exp = spec.get("expirationSeconds")
    if exp is None:
        exp = DEFAULT_EXPIRATION_S
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise bad_request("spec.expirationSeconds must be an integer")
    if exp < MIN_EXPIRATION_S:
        cause = f"Invalid value: {exp}: may not specify a duration less than 10 minutes"
        raise invalid("TokenRequest", name, [("spec.expirationSeconds", "FieldValueInvalid", cause)], AUTHN)
    if exp > MAX_EXPIRATION_S:
        cause = f"Invalid value: {exp}: may not specify a duration larger than 2^32 seconds"
        raise invalid("TokenRequest", name, [("spec.expirationSeconds", "FieldValueInvalid", cause)], AUTHN)
    audiences = tuple(str(a) for a in (spec.get("audiences") or API_AUDIENCES))
    bound = None
    ref = spec.get("boundObjectRef")
    if isinstance(ref, dict) and ref.get("kind"):
        bkind, bname = str(ref.get("kind")), str(ref.get("name") or "")
        if bkind not in ("Pod", "Secret"):
            cause = f'Unsupported value: "{bkind}": supported values: "Pod", "Secret"'
            raise invalid(
                "TokenRequest", name, [("spec.boundObjectRef.kind", "FieldValueNotSupported", cause)], AUTHN
            )
        bobj = twin.store.get(GroupResource("", "pods" if bkind == "Pod" else "secrets"), namespace, bname)
        if bobj is None:
            raise not_found("", "pods" if bkind == "Pod" else "secrets", bname)
        bound = (bkind, bname, str(bobj["metadata"].get("uid", "")))
        ref = {**ref, "uid": bound[2]}
    with twin.lock:
        token, rec = auth_state(twin).tokens.mint(
            namespace, name, str(sa["metadata"].get("uid", "")), twin.now(), exp, audiences, bound
        )
    body["metadata"] = {"name": name, "namespace": namespace, "creationTimestamp": rfc3339(rec.issued)}
    body["spec"] = {"audiences": list(audiences), "expirationSeconds": exp, "boundObjectRef": ref or None}
    body["status"] = {"token": token, "expirationTimestamp": rfc3339(rec.expires)}
    return Response.json(body, 201)
