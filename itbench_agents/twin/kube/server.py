"""The twin's Kubernetes REST API: routing, verbs, subresources and watches over the object store.

``make_kube_handler(twin)`` returns the ``Request -> Response`` function served by
:class:`~itbench_agents.twin.httpserver.HttpEndpoint`. Every request takes ``twin.lock`` and
brings the cluster up to the clock (``twin.sync()``) before serving; watches release the lock
while they wait for changes.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import yaml

from ...k8s.kinds import GroupResource, ResourceInfo
from ...k8s.times import rfc3339
from ..httpserver import Handler, Request, Response
from . import discovery
from .auth import check_request
from .auth import install as install_auth
from .auth import reviews as auth_reviews
from .conversion import needs_conversion, to_served, to_storage
from .decoding import YamlLimitError, load_yaml, summarize
from .defaults import SERVICES, apply_defaults
from .errors import ApiError, bad_request, forbidden, invalid, method_not_allowed, not_found, route_not_found
from .metrics import node_metrics, pod_metrics
from .openapi import OpenAPI
from .patch import (
    APPLY,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    apply_json_patch,
    json_merge,
    strategic_merge,
    unsupported_media,
)
from .pdb import check_eviction
from .pod_deletion import delete_pod
from .resources import ResourceRegistry, registry_for
from .selectors import labels_match, parse_field_selector, parse_label_selector, selector_from_label_selector
from .store import ChangeEvent, Obj, clone
from .tables import partial_metadata, to_table
from .validation import decode_and_validate

log = logging.getLogger(__name__)

NAMESPACES = GroupResource("", "namespaces")
PODS = GroupResource("", "pods")
CORE_EVENTS = GroupResource("", "events")
EVENTS_V1 = GroupResource("events.k8s.io", "events")
COMPONENT_STATUSES = GroupResource("", "componentstatuses")
# what `kubectl get componentstatuses` shows on a healthy cluster (computed, never stored)
COMPONENTS = (
    ("scheduler", "ok"),
    ("controller-manager", "ok"),
    ("etcd-0", '{"health":"true","reason":""}'),
)
SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-itbench-twin",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}
WATCH_POLL_S = 0.5
STREAMING_SUBRESOURCES = {"exec", "attach", "portforward", "proxy"}
MAX_REQUEST_BYTES = 3 * 1024 * 1024  # the apiserver's limit on a write's body (twice etcd's)
MAX_STORED_BYTES = 3 * 512 * 1024  # etcd's --max-request-bytes default (1.5 MiB)


@dataclass
class Target:
    """A parsed resource URL."""

    info: ResourceInfo
    namespace: str | None
    name: str | None
    sub: str | None
    watch_prefix: bool = False
    proxy_path: str | None = None
    """The path after ``.../proxy`` (a service proxy request)."""


def _status_ok(details: Obj | None = None) -> Obj:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    return body


UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")


def _flag(req: Request, name: str) -> bool:
    """A boolean query parameter (``watch=1``, ``follow=true``)."""
    return (req.arg(name) or "").lower() in ("1", "true", "yes")


def _table_include(req: Request) -> str | None:
    """The ``includeObject`` mode of a request that asks for a Table (``Accept: ...;as=Table``); None
    when the request wants plain objects."""
    if "as=Table" not in req.headers.get("accept", ""):
        return None
    return req.arg("includeObject", "Metadata") or "Metadata"


OPENAPI_V2_PB = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
OPENAPI_V3_PB = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"


def _openapi_media(accept: str, proto: str) -> str | None:
    """The media type an OpenAPI request gets: JSON or the gnostic protobuf ``proto``, in the order of
    the ``Accept`` clauses (q-values ignored); None when it accepts neither (406)."""
    if not accept.strip():
        return "application/json"
    for clause in accept.split(","):
        media = clause.split(";")[0].strip().lower()
        if media in ("application/json", "*/*", "application/*"):
            return "application/json"
        if media in (proto, proto.replace("@", ".")):
            return proto
    return None


def _check_stored_size(obj: Obj, old: Obj | None = None) -> None:
    """etcd refuses values above 1.5 MiB; the apiserver passes its error on as a 500 (``old``: the
    stored object a /status write changes only the status of)."""
    final = {**old, "status": obj.get("status")} if old is not None else obj
    if len(json.dumps(final, separators=(",", ":"))) > MAX_STORED_BYTES:
        raise ApiError(500, "", "etcdserver: request is too large")


def _has_status_subresource(info: ResourceInfo) -> bool:
    """Whether writes to the main resource ignore ``.status`` (the resource has a /status subresource).
    Nodes keep the status they are created with, as the node strategy does."""
    return "status" in info.subresources and info.gr != GroupResource("", "nodes")


def _keep_status(info: ResourceInfo, new: Obj, old: Obj | None) -> None:
    """An update of the main resource keeps the stored status (the apiserver's PrepareForUpdate)."""
    if "status" not in info.subresources or old is None:
        return
    if "status" in old:
        new["status"] = clone(old["status"])
    else:
        new.pop("status", None)


def _media_type(req: Request) -> str:
    """The request body's media type, without parameters (``application/json``)."""
    return req.headers.get("content-type", "").split(";")[0].strip()


class KubeApiServer:
    """The twin's Kubernetes API server: the request handler of one twin (not a client; that is
    ``k8s/client.py``'s ``KubeApi``)."""

    def __init__(self, twin: Any) -> None:
        self.twin = twin
        self.registry: ResourceRegistry = registry_for(twin)
        self.openapi = OpenAPI(self.registry)
        self._json_cache: dict[tuple[str, ...], tuple[str, Obj, bytes]] = {}
        install_auth(twin)  # bootstrap RBAC policy + token authority (auth/)

    # ------------------------------------------------------------------ entry point
    def __call__(self, req: Request) -> Response:
        try:
            return self._route(req)
        except ApiError as e:
            return Response.json(e.status(), e.code)
        except RecursionError:
            return Response.json(bad_request("request nesting too deep").status(), 400)

    def _route(self, req: Request) -> Response:
        path = req.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if parts[:2] != ["itbench", "v1"]:  # authentication + RBAC (401 / 403) as the apiserver does first
            check_request(self.twin, req.method, req.path or "/", req.query, req.headers)
        if req.method in ("HEAD", "OPTIONS") and not (parts and parts[0] in ("api", "apis")):
            raise method_not_allowed()
        if path in ("/healthz", "/livez", "/readyz", "/version") and req.method != "GET":
            raise method_not_allowed()
        if path in ("/healthz", "/livez", "/readyz"):
            return Response.text("ok")
        if path == "/version":
            return Response.json(SERVER_VERSION)
        if parts[:1] == ["openapi"]:
            return self._openapi(req, parts)
        if parts[:2] == ["itbench", "v1"]:
            return self._control(req, parts[2:])
        if parts[:1] == ["api"] or parts[:1] == ["apis"]:
            with self.twin.lock:
                self.twin.sync()
                return self._api(req, parts)
        raise route_not_found()

    # ------------------------------------------------------------------ twin control
    def _control(self, req: Request, parts: list[str]) -> Response:
        if parts == ["now"] and req.method == "GET":
            with self.twin.lock:
                self.twin.sync()
                return Response.json({"now": rfc3339(self.twin.now()), "unix": self.twin.now()})
        if parts == ["advance"] and req.method == "POST":
            budget = self._advance_budget_for(req)
            body = self._json_body(req) if req.body else {}
            seconds = body.get("seconds") if isinstance(body, dict) else None
            if (
                not isinstance(seconds, int | float)
                or isinstance(seconds, bool)
                or not 0 <= seconds <= 7 * 86400
            ):
                raise bad_request('"seconds" must be a number between 0 and 604800')
            if budget is not None:
                refused = budget.take(float(seconds))
                if refused:
                    raise ApiError(429, "TooManyRequests", refused)
            self.twin.advance(float(seconds))
            return Response.json({"now": rfc3339(self.twin.now()), "unix": self.twin.now()})
        if parts in (["now"], ["advance"]):
            raise method_not_allowed()
        raise route_not_found()

    def _advance_budget_for(self, req: Request) -> Any:
        """Who may fast-forward the clock: the admin freely, any other authenticated user within
        the harness's budget (``twin.advance_budget``); anonymous callers get 401."""
        from .auth import authenticate, is_admin

        user = authenticate(self.twin, req.headers)
        if user.username == "system:anonymous":
            raise ApiError(401, "Unauthorized", "Unauthorized")
        if is_admin(user):
            return None
        return getattr(self.twin, "advance_budget", None)

    # ------------------------------------------------------------------ openapi
    def _openapi(self, req: Request, parts: list[str]) -> Response:
        if req.method != "GET":
            raise method_not_allowed()
        accept = req.headers.get("accept", "")
        if parts == ["openapi", "v2"]:
            media = _openapi_media(accept, OPENAPI_V2_PB)
            if media is None:
                return Response(406, b"", {"Content-Type": "text/plain"})
            with self.twin.lock:
                if media == OPENAPI_V2_PB:
                    # the content type without the "@" (Go's mime parser refuses it), as kube-openapi answers
                    ctype = OPENAPI_V2_PB.replace("@", ".")
                    return Response(200, self.openapi.v2_proto(), {"Content-Type": ctype})
                return Response(200, self.openapi.v2(), {"Content-Type": "application/json"})
        if parts == ["openapi", "v3"]:
            with self.twin.lock:
                return Response.json(self.openapi.v3_root())
        if len(parts) > 2 and parts[1] == "v3":
            with self.twin.lock:
                doc = self.openapi.v3_gv("/".join(parts[2:]))
            if doc is None:  # kube-openapi's answer for a group-version it does not serve
                return Response(404, b"", {"Content-Type": "text/plain; charset=utf-8"})
            media = _openapi_media(accept, OPENAPI_V3_PB)
            if media is None:
                return Response(406, b"", {"Content-Type": "text/plain"})
            if media == OPENAPI_V3_PB:
                with self.twin.lock:
                    pb = self.openapi.v3_gv_proto("/".join(parts[2:])) or b""
                return Response(200, pb, {"Content-Type": OPENAPI_V3_PB.replace("@", ".")})
            return Response(200, doc, {"Content-Type": "application/json"})
        raise route_not_found()

    # ------------------------------------------------------------------ /api, /apis
    def _api(self, req: Request, parts: list[str]) -> Response:
        accept = req.headers.get("accept", "")
        if parts == ["api"] or parts == ["apis"]:
            if req.method != "GET":
                raise method_not_allowed()
            ctype = discovery.wants_aggregated(accept)
            if ctype:
                return Response.json(
                    discovery.aggregated(self.registry, parts == ["api"], ctype), content_type=ctype
                )
            if parts == ["api"]:
                return Response.json(discovery.api_versions(req.headers.get("host", "127.0.0.1")))
            return Response.json(discovery.api_group_list(self.registry))
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 2:
                doc = discovery.api_group(self.registry, parts[1])
                if doc is None or req.method != "GET":
                    raise route_not_found()
                return Response.json(doc)
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            doc = discovery.api_resource_list(self.registry, group, version)
            if doc is None:
                raise route_not_found()
            if req.method != "GET":
                raise method_not_allowed()
            return Response.json(doc)
        target = self._target(group, version, rest)
        return self._serve(req, target)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        watch_prefix = False
        if rest[0] == "watch":
            watch_prefix, rest = True, rest[1:]
            if not rest:
                raise route_not_found()
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns_info = self.registry.get(group, version, rest[2])
            if ns_info is not None and ns_info.namespaced:
                namespace, rest = rest[1], rest[2:]
        info = self.registry.get(group, version, rest[0])
        if info is None:
            raise route_not_found()
        if info.namespaced and namespace is None and len(rest) > 1:
            raise route_not_found()
        proxy_path = None
        if len(rest) > 3 and rest[2] == "proxy":  # services/NAME/proxy/PATH...: the rest is the path
            proxy_path, rest = "/" + "/".join(rest[3:]), rest[:3]
        if len(rest) > 3:
            raise route_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in info.subresources:
            raise route_not_found()
        return Target(info, namespace, name, sub, watch_prefix, proxy_path)

    # ------------------------------------------------------------------ dispatch
    def _serve(self, req: Request, t: Target) -> Response:
        m = req.method
        verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(m)
        if verb is None:
            raise method_not_allowed()
        if len(req.body) > MAX_REQUEST_BYTES:
            raise ApiError(
                413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BYTES}"
            )
        if t.sub == "proxy" and t.info.gr == SERVICES and t.namespace and t.name:
            return self._service_proxy(req, t)
        if t.sub in STREAMING_SUBRESOURCES:
            raise ApiError(
                400,
                "BadRequest",
                f"{t.sub} is not supported by the itbench twin: it simulates containers and has no processes "
                "to connect to (use `kubectl logs`, `kubectl describe` and the observability endpoints instead)",
            )
        if auth_reviews.handles(t.info.group, t.info.resource, t.sub):  # access reviews, TokenRequest
            return auth_reviews.serve(self, req, t.info, t.namespace, t.name, t.sub)
        if t.info.group == "metrics.k8s.io":
            if m != "GET":
                raise method_not_allowed()
            return self._metrics(req, t)
        if t.info.gr == EVENTS_V1:
            return self._events_v1(req, t)
        if t.info.gr == COMPONENT_STATUSES:
            return self._component_statuses(req, t)
        if t.sub is not None:
            return self._subresource(req, t)
        if t.name is None:
            if t.info.namespaced and t.namespace is None and m != "GET":
                # the apiserver registers only list/watch across namespaces (no create, no deletecollection)
                raise method_not_allowed()
            if m == "GET":
                if t.watch_prefix or _flag(req, "watch"):
                    return self._watch(req, t)
                return self._list(req, t)
            if m == "POST":
                return self._create(req, t)
            if m == "DELETE":
                return self._delete_collection(req, t)
            raise method_not_allowed()
        if t.watch_prefix and m == "GET":
            return self._watch(req, t, name=t.name)
        if m == "GET":
            return self._get(req, t)
        if m == "PUT":
            return self._update(req, t)
        if m == "PATCH":
            return self._patch(req, t)
        if m == "DELETE":
            return self._delete(req, t)
        raise method_not_allowed()

    # ------------------------------------------------------------------ helpers
    @property
    def store(self) -> Any:
        return self.twin.store

    def _ns(self, t: Target) -> str:
        return (t.namespace or "") if t.info.namespaced else ""

    def _json_body(self, req: Request, kind: str = "") -> Any:
        ctype = req.headers.get("content-type", "")
        if "protobuf" in ctype:
            from .protobuf import decode_body

            return decode_body(req.body)
        if "cbor" in ctype:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml, application/vnd.kubernetes.protobuf",
            )
        if not req.body:
            raise bad_request("the request body is empty")
        try:
            text = req.body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise bad_request(f"couldn't decode the request body: {e}") from e
        try:
            if "yaml" in ctype:
                return load_yaml(text)
            return json.loads(text)
        except YamlLimitError as e:  # go-yaml's limits, worded as the apiserver's decoder reports them
            raise bad_request(
                f"the object provided is unrecognized (must be of type {kind or 'Object'}): {e} "
                f"({summarize(req.body)})"
            ) from e
        except (json.JSONDecodeError, yaml.YAMLError, ValueError) as e:
            raise bad_request(f"couldn't get version/kind; json parse error: {e}") from e

    def _object_body(self, req: Request, t: Target) -> Obj:
        body = self._json_body(req, t.info.kind)
        if not isinstance(body, dict):
            raise bad_request(
                f"json: cannot unmarshal {type(body).__name__} into Go value of type struct; the body must be "
                f"a {t.info.kind} object"
            )
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind and kind != t.info.kind:
            raise bad_request(
                f'{kind} in version "{api_version}" cannot be handled as a {t.info.kind}: '
                f"the kind of the object ({kind}) does not match the resource ({t.info.kind})"
            )
        if api_version and api_version != t.info.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({t.info.api_version})"
            )
        body["kind"], body["apiVersion"] = t.info.kind, t.info.api_version
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = {}
        elif not isinstance(meta, dict):
            raise bad_request(
                f'{t.info.kind} in version "{t.info.version}" cannot be handled as a '
                f"{t.info.kind}: metadata must be an object"
            )
        return body

    def _check_namespace(self, t: Target, obj: Obj) -> str:
        ns = ""
        if t.info.namespaced:
            ns = t.namespace or ""
            body_ns = obj["metadata"].get("namespace")
            if body_ns and body_ns != ns:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            obj["metadata"]["namespace"] = ns
            if self.store.get(NAMESPACES, "", ns) is None:
                raise not_found("", "namespaces", ns)
            ns_obj = self.store.get(NAMESPACES, "", ns)
            if ns_obj["metadata"].get("deletionTimestamp"):
                raise forbidden(
                    f'{t.info.resource} "{obj["metadata"].get("name", "")}" is '
                    f"forbidden: unable to create new content in namespace {ns} because it is being "
                    "terminated"
                )
        else:
            obj["metadata"].pop("namespace", None)
        return ns

    def _versioned(self, t: Target, obj: Obj) -> Obj:
        """A stored object as the URL's version serves it."""
        if needs_conversion(t.info.gr, t.info.version):
            obj = to_served(t.info.gr, t.info.version, obj)
        if obj.get("apiVersion") != t.info.api_version or obj.get("kind") != t.info.kind:
            obj = {**obj, "apiVersion": t.info.api_version, "kind": t.info.kind}
        return obj

    def _dry_run(self, req: Request) -> bool:
        vals = req.query.get("dryRun") or []
        for v in vals:
            if v != "All":
                raise bad_request(f'Invalid dryRun value "{v}": supported values are "All"')
        return bool(vals)

    def _validate(self, req: Request, t: Target, obj: Obj) -> list[str]:
        mode = req.arg("fieldValidation", "Warn") or "Warn"
        if mode not in ("Ignore", "Warn", "Strict"):
            raise bad_request(f'fieldValidation must be one of "Ignore", "Warn", "Strict", got "{mode}"')
        return decode_and_validate(t.info, obj, mode, self.twin.validators.get(t.info.gr, []))

    def _respond(
        self, req: Request, t: Target, obj: Obj, status: int = 200, warnings: list[str] | None = None
    ) -> Response:
        include = _table_include(req)
        if include is not None:
            body: Obj = to_table(t.info, [obj], self.twin.now(), include_object=include)
        else:
            body = self._versioned(t, obj)
        resp = Response.json(body, status)
        if warnings:
            resp.headers["Warning"] = ", ".join(f'299 - "{w}"' for w in warnings[:20])
        return resp

    # ------------------------------------------------------------------ read
    def _get(self, req: Request, t: Target) -> Response:
        obj = self.store.get(t.info.gr, self._ns(t), t.name)
        if obj is None:
            raise not_found(t.info.group, t.info.resource, t.name or "")
        return self._respond(req, t, obj)

    def _select(self, req: Request, t: Target) -> list[Obj]:
        label_reqs = parse_label_selector(req.arg("labelSelector"))
        field_pred = parse_field_selector(req.arg("fieldSelector"), t.info.resource, t.info.kind)
        objs = self.store.list(t.info.gr, t.namespace if t.info.namespaced else None)
        return [o for o in objs if labels_match(label_reqs, o) and field_pred(o)]

    def _list(self, req: Request, t: Target) -> Response:
        objs = self._select(req, t)
        rv = str(self.store.resource_version)
        start = 0
        cont = req.arg("continue")
        if cont:
            try:
                token = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                start_key = (str(token["ns"]), str(token["name"]))
                rv = str(token["rv"])
            except (ValueError, KeyError, TypeError) as e:
                raise bad_request(f"invalid continue token: {e}") from e
            start = next(
                (
                    i
                    for i, o in enumerate(objs)
                    if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start_key
                ),
                len(objs),
            )
        objs = objs[start:]
        meta: Obj = {"resourceVersion": rv}
        limit_s = req.arg("limit")
        if limit_s:
            try:
                limit = int(limit_s)
            except ValueError as e:
                raise bad_request(f"invalid limit: {limit_s}") from e
            if 0 < limit < len(objs):
                last = objs[limit - 1]["metadata"]
                token = {"rv": rv, "ns": last.get("namespace", ""), "name": last["name"]}
                meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
                meta["remainingItemCount"] = len(objs) - limit
                objs = objs[:limit]
        include = _table_include(req)
        if include is not None:
            table = to_table(t.info, objs, self.twin.now(), include_object=include, list_meta=meta)
            return Response.json(table)
        head = json.dumps(
            {"kind": t.info.list_kind_name, "apiVersion": t.info.api_version, "metadata": meta},
            separators=(",", ":"),
        )
        items = b",".join(self._encoded(t, o) for o in objs)
        return Response(
            200, head[:-1].encode() + b',"items":[' + items + b"]}", {"Content-Type": "application/json"}
        )

    def _encoded(self, t: Target, obj: Obj) -> bytes:
        """The JSON of a stored object as served at ``t``, cached per resourceVersion (objects are immutable
        once stored, so a list re-serialises only what changed)."""
        meta = obj["metadata"]
        key = (t.info.group, t.info.version, t.info.resource, meta.get("namespace", ""), meta["name"])
        rv = meta.get("resourceVersion", "")
        hit = self._json_cache.get(key)
        if hit is not None and hit[0] == rv and hit[1] is obj:
            return hit[2]
        data = json.dumps(self._versioned(t, obj), separators=(",", ":")).encode()
        if len(self._json_cache) > 200_000:
            self._json_cache.clear()
        self._json_cache[key] = (rv, obj, data)
        return data

    # ------------------------------------------------------------------ watch
    def _watch(self, req: Request, t: Target, name: str | None = None) -> Response:
        label_reqs = parse_label_selector(req.arg("labelSelector"))
        field_pred = parse_field_selector(req.arg("fieldSelector"), t.info.resource, t.info.kind)
        try:
            timeout = float(req.arg("timeoutSeconds") or 1800)
        except ValueError as e:
            raise bad_request("invalid timeoutSeconds") from e
        rv_s = req.arg("resourceVersion") or ""
        try:
            rv = int(rv_s) if rv_s not in ("", "0") else None
        except ValueError as e:
            raise bad_request(f'invalid resource version "{rv_s}"') from e
        include = _table_include(req)
        bookmarks = _flag(req, "allowWatchBookmarks")
        ns = t.namespace if t.info.namespaced else None
        info = t.info

        def wanted(obj: Obj) -> bool:
            if name is not None and obj["metadata"].get("name") != name:
                return False
            return labels_match(label_reqs, obj) and field_pred(obj)

        def key(obj: Obj) -> tuple[str, str]:
            return (obj["metadata"].get("namespace", "") or "", obj["metadata"].get("name", ""))

        initial: list[Obj] = []
        current = [o for o in self.store.list(info.gr, ns) if wanted(o)]
        matched = {key(o) for o in current}  # objects the watcher is known to see (selector transitions)
        if rv is None:
            initial = current
            rv = self.store.resource_version
        elif rv > self.store.resource_version:
            rv = self.store.resource_version
        now = self.twin.now()
        first_table = [True]

        def encode(etype: str, obj: Obj) -> bytes:
            if include is not None and etype != "BOOKMARK":
                body: Obj = to_table(info, [obj], now, include_object=include, with_columns=first_table[0])
                first_table[0] = False
            else:
                body = self._versioned(t, obj)
            return json.dumps({"type": etype, "object": body}, separators=(",", ":")).encode() + b"\n"

        start_chunks = [encode("ADDED", o) for o in initial]
        twin = self.twin
        store = self.store

        def stream() -> Iterator[bytes]:
            nonlocal rv, now
            yield from start_chunks
            deadline = time.monotonic() + timeout
            last_bookmark = time.monotonic()
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                chunks: list[bytes] = []
                with twin.lock:
                    twin.sync()
                    events: list[ChangeEvent] = list(store.events_since(rv, info.gr, ns))
                    if not events:
                        store.changed.wait(timeout=min(WATCH_POLL_S, remaining))
                        twin.sync()
                        events = list(store.events_since(rv, info.gr, ns))
                    now = twin.now()
                    for ev in events:
                        rv = ev.rv
                        k = key(ev.obj)
                        if wanted(ev.obj):
                            etype = "ADDED" if ev.type == "MODIFIED" and k not in matched else ev.type
                            if ev.type == "DELETED":
                                matched.discard(k)
                            else:
                                matched.add(k)
                            chunks.append(encode(etype, ev.obj))
                        elif k in matched:  # changed so that it no longer matches: gone for this watcher
                            matched.discard(k)
                            chunks.append(encode("DELETED", ev.obj))
                    if bookmarks and time.monotonic() - last_bookmark > 5 and not chunks:
                        last_bookmark = time.monotonic()
                        chunks.append(
                            encode(
                                "BOOKMARK",
                                {
                                    "kind": info.kind,
                                    "apiVersion": info.api_version,
                                    "metadata": {"resourceVersion": str(store.resource_version)},
                                },
                            )
                        )
                if chunks:
                    yield from chunks
                else:
                    yield b""  # nothing to send: lets the HTTP server notice a client that went away

        ctype = "application/json"
        return Response(200, stream(), {"Content-Type": ctype})

    # ------------------------------------------------------------------ create
    def _create(self, req: Request, t: Target) -> Response:
        if "create" not in t.info.verbs:
            raise method_not_allowed()
        return self._create_obj(req, t, self._object_body(req, t))

    def _create_obj(self, req: Request, t: Target, obj: Obj) -> Response:
        dry = self._dry_run(req)
        warnings = self._validate(req, t, obj)
        obj = to_storage(t.info.gr, t.info.version, obj)
        ns = self._check_namespace(t, obj)
        meta = obj["metadata"]
        if meta.get("name") and self.store.get(t.info.gr, ns, meta["name"]) is not None:
            from .errors import already_exists

            raise already_exists(t.info.group, t.info.resource, meta["name"])
        for k in (
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "selfLink",
            "generation",
        ):
            meta.pop(k, None)
        meta.pop("managedFields", None)
        if _has_status_subresource(t.info):
            obj.pop("status", None)  # only the /status subresource writes status
        apply_defaults(self.store, t.info, obj)
        obj = self._admit(req, t, obj, "CREATE", warnings=warnings, dry_run=dry)
        if not dry:
            _check_stored_size(obj)
        created = self.store.create(t.info.gr, obj, dry_run=dry)
        return self._respond(req, t, created, 201, warnings)

    def _admit(
        self,
        req: Request,
        t: Target,
        obj: Obj,
        operation: str,
        *,
        old: Obj | None = None,
        warnings: list[str],
        dry_run: bool,
    ) -> Obj:
        """The admission chain (mutating plug-ins on create, then the addons' validating webhooks)."""
        if operation != "CREATE" and not self.twin.admission_hooks:
            return obj
        try:
            from ..controllers.admission import admit
        except ImportError:  # the controllers package is optional for a bare API server
            return obj
        user = None
        if self.twin.admission_hooks:
            from .auth import request_user

            user = request_user(self.twin, req.headers)
        result = admit(
            self.twin, t.info.gr, obj, operation, old=old, user=user, dry_run=dry_run, warnings=warnings
        )
        return result if isinstance(result, dict) else obj

    # ------------------------------------------------------------------ update
    def _update(self, req: Request, t: Target, status_only: bool = False) -> Response:
        if "update" not in t.info.verbs:
            raise method_not_allowed()
        obj = self._object_body(req, t)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != t.name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({t.name})"
            )
        meta["name"] = t.name
        ns = self._ns(t)
        if t.info.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
        dry = self._dry_run(req)
        if self.store.get(t.info.gr, ns, t.name) is None:
            raise not_found(t.info.group, t.info.resource, t.name or "")
        warnings = self._validate(req, t, obj) if not status_only else []
        obj = to_storage(t.info.gr, t.info.version, obj)
        if not status_only:
            old = self.store.get(t.info.gr, ns, t.name)
            _keep_status(t.info, obj, old)
            apply_defaults(self.store, t.info, obj, old=old)
            obj = self._admit(req, t, obj, "UPDATE", old=old, warnings=warnings, dry_run=dry)
        if not dry:
            _check_stored_size(obj, self.store.get(t.info.gr, ns, t.name) if status_only else None)
        updated = self.store.update(t.info.gr, obj, dry_run=dry, status_only=status_only)
        return self._respond(req, t, updated, 200, warnings)

    # ------------------------------------------------------------------ patch
    def _patched(self, req: Request, t: Target, current: Obj) -> Obj:
        ctype = _media_type(req)
        if ctype == APPLY:  # approximated: the applied configuration merged like a strategic merge patch
            applied = self._object_body(req, t)
            if t.info.model is None:
                merged = json_merge(current, applied)
                return merged if isinstance(merged, dict) else {}
            return strategic_merge(current, applied, t.info.model)
        if ctype == JSON_PATCH:
            ops = self._json_body(req)
            return apply_json_patch(current, ops)
        patch = self._json_body(req)
        if ctype == MERGE:
            if not isinstance(patch, dict):
                raise bad_request(
                    "json: cannot unmarshal array into Go value of type map[string]interface {}"
                )
            merged = json_merge(current, patch)
            return merged if isinstance(merged, dict) else {}
        if ctype == STRATEGIC:
            if t.info.model is None:
                raise unsupported_media(ctype, strategic_ok=False)
            return strategic_merge(current, patch, t.info.model)
        raise unsupported_media(ctype)

    def _patch(self, req: Request, t: Target, status_only: bool = False) -> Response:
        if "patch" not in t.info.verbs:
            raise method_not_allowed()
        ns = self._ns(t)
        current = self.store.get(t.info.gr, ns, t.name)
        is_apply = _media_type(req) == APPLY
        if is_apply and not req.arg("fieldManager"):
            raise bad_request("PATCH /apply requires a fieldManager query parameter")
        if current is None:
            if is_apply and not status_only:  # server-side apply creates what does not exist
                obj = self._object_body(req, t)
                obj["metadata"].setdefault("name", t.name)
                if obj["metadata"]["name"] != t.name:
                    raise bad_request(
                        f"the name of the object ({obj['metadata']['name']}) does not match the name on the URL "
                        f"({t.name})"
                    )
                return self._create_obj(req, t, obj)
            raise not_found(t.info.group, t.info.resource, t.name or "")
        new = self._patched(req, t, clone(self._versioned(t, current)))
        if not isinstance(new, dict):
            raise bad_request("the patch produced a value that is not an object")
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise invalid(
                t.info.kind,
                t.name or "",
                [("metadata", "FieldValueRequired", "Required value")],
                t.info.group,
            )
        if meta.get("name") != t.name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({t.name})"
            )
        if t.info.namespaced and meta.get("namespace", ns) != ns:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        # a patch carries the current resourceVersion unless it sets one itself (optimistic locking)
        patch_rv = meta.get("resourceVersion")
        if patch_rv is None:
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        new["kind"], new["apiVersion"] = t.info.kind, t.info.api_version
        dry = self._dry_run(req)
        warnings = self._validate(req, t, new) if not status_only else []
        new = to_storage(t.info.gr, t.info.version, new)
        if not status_only:
            _keep_status(t.info, new, current)
            apply_defaults(self.store, t.info, new, old=current)
            new = self._admit(req, t, new, "UPDATE", old=current, warnings=warnings, dry_run=dry)
        if not dry:
            _check_stored_size(new, current if status_only else None)
        updated = self.store.update(t.info.gr, new, dry_run=dry, status_only=status_only)
        return self._respond(req, t, updated, 200, warnings)

    # ------------------------------------------------------------------ delete
    def _delete_options(self, req: Request) -> Obj:
        opts: Obj = {}
        if req.body:
            body = self._json_body(req)
            if isinstance(body, dict):
                opts = body
            else:
                raise bad_request("the body of a delete request must be a DeleteOptions object")
        for k in ("propagationPolicy", "gracePeriodSeconds"):
            if req.arg(k) is not None:
                opts[k] = req.arg(k)
        if req.arg("orphanDependents") is not None:
            opts["orphanDependents"] = _flag(req, "orphanDependents")
        policy = opts.get("propagationPolicy")
        if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
            raise bad_request(
                f'propagationPolicy: Unsupported value: "{policy}": supported values: '
                '"Foreground", "Background", "Orphan"'
            )
        return opts

    def _delete_one(self, t: Target, obj: Obj, opts: Obj, dry: bool) -> Obj:
        meta = obj["metadata"]
        ns, name = meta.get("namespace", "") or "", meta["name"]
        pre = opts.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise ApiError(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                f"object meta: {meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise ApiError(
                409,
                "Conflict",
                f"Precondition failed: ResourceVersion in precondition: "
                f"{pre['resourceVersion']}, ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        orphan = opts.get("propagationPolicy") == "Orphan" or opts.get("orphanDependents") is True
        if dry:
            return self.store.delete(t.info.gr, ns, name, dry_run=True)
        if orphan:
            self._orphan_dependents(meta.get("uid", ""), ns)
        elif (
            opts.get("propagationPolicy") == "Foreground"
            and t.info.gr not in (NAMESPACES, PODS)
            and "foregroundDeletion" not in (meta.get("finalizers") or [])
        ):
            # the garbage collector deletes the dependents, then drops the finalizer and the object
            marked = clone(obj)
            marked["metadata"]["finalizers"] = [*(meta.get("finalizers") or []), "foregroundDeletion"]
            self.store.update(t.info.gr, marked)
        if t.info.gr == NAMESPACES:
            if name in UNDELETABLE_NAMESPACES:
                raise forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
            # phase Terminating; the namespace controller (controllers/gc.py) empties it, then removes it
            return self.store.mark_deleted(  # type: ignore[no-any-return]
                NAMESPACES, "", name, 0, status={"phase": "Terminating"}
            )
        if t.info.gr == PODS:
            return delete_pod(self.store, obj, opts.get("gracePeriodSeconds"))
        return self.store.delete(t.info.gr, ns, name)  # type: ignore[no-any-return]

    def _orphan_dependents(self, uid: str, namespace: str) -> None:
        for gr in self.store.kinds():
            for dep in list(self.store.list(gr, namespace or None)):
                refs = dep["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == uid for r in refs):
                    new = clone(dep)
                    kept = [r for r in refs if r.get("uid") != uid]
                    if kept:
                        new["metadata"]["ownerReferences"] = kept
                    else:
                        new["metadata"].pop("ownerReferences", None)
                    self.store.update(gr, new)

    def _delete(self, req: Request, t: Target) -> Response:
        if "delete" not in t.info.verbs:
            raise method_not_allowed()
        ns = self._ns(t)
        obj = self.store.get(t.info.gr, ns, t.name)
        if obj is None:
            raise not_found(t.info.group, t.info.resource, t.name or "")
        opts = self._delete_options(req)
        dry = self._dry_run(req) or "All" in (opts.get("dryRun") or [])
        self._admit(req, t, obj, "DELETE", old=obj, warnings=[], dry_run=dry)
        result = self._delete_one(t, obj, opts, dry)
        if result["metadata"].get("deletionTimestamp") and not dry:
            return self._respond(req, t, result)  # finalizers pending: the object lives on
        if t.info.gr == PODS or dry:
            return self._respond(req, t, result)
        details: Obj = {"name": t.name, "kind": t.info.resource, "uid": obj["metadata"].get("uid")}
        if t.info.group:
            details["group"] = t.info.group
        return Response.json(_status_ok(details))

    def _delete_collection(self, req: Request, t: Target) -> Response:
        if "deletecollection" not in t.info.verbs:
            raise method_not_allowed()
        opts = self._delete_options(req)
        dry = self._dry_run(req) or "All" in (opts.get("dryRun") or [])
        objs = self._select(req, t)
        deleted = []
        for o in objs:
            if (
                self.store.get(t.info.gr, o["metadata"].get("namespace", "") or "", o["metadata"]["name"])
                is None
            ):
                continue
            self._admit(req, t, o, "DELETE", old=o, warnings=[], dry_run=dry)
            deleted.append(self._versioned(t, self._delete_one(t, o, opts, dry)))
        return Response.json(
            {
                "kind": t.info.list_kind_name,
                "apiVersion": t.info.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": deleted,
            }
        )

    # ------------------------------------------------------------------ subresources
    def _subresource(self, req: Request, t: Target) -> Response:
        sub, m = t.sub, req.method
        if sub == "status":
            if m == "GET":
                return self._get(req, t)
            if m == "PUT":
                return self._update(req, t, status_only=True)
            if m == "PATCH":
                return self._patch(req, t, status_only=True)
            raise method_not_allowed()
        if sub == "scale":
            return self._scale(req, t)
        if sub == "log":
            if m != "GET":
                raise method_not_allowed()
            return self._log(req, t)
        if sub == "eviction":
            if m != "POST":
                raise method_not_allowed()
            return self._evict(req, t)
        if sub == "binding":
            if m != "POST":
                raise method_not_allowed()
            return self._bind(req, t)
        if sub == "ephemeralcontainers":  # what `kubectl debug pod/X` patches
            if m == "GET":
                return self._get(req, t)
            if m in ("PATCH", "PUT"):
                raise ApiError(
                    400,
                    "BadRequest",
                    "ephemeral containers (kubectl debug) are not supported by the itbench twin: it simulates "
                    "containers and has no processes to attach a debugging container to (use `kubectl logs`, "
                    "`kubectl describe` and the observability endpoints instead)",
                )
            raise method_not_allowed()
        if sub == "finalize" and m == "PUT":
            return self._update(req, t)
        raise method_not_allowed()

    def _scale_obj(self, t: Target, obj: Obj) -> Obj:
        meta = obj["metadata"]
        sel = (obj.get("spec") or {}).get("selector")
        sel_str = ",".join(
            str(r) for r in selector_from_label_selector(sel if isinstance(sel, dict) else None)
        )
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": sel_str},
        }

    def _scale(self, req: Request, t: Target) -> Response:
        ns = self._ns(t)
        obj = self.store.get(t.info.gr, ns, t.name)
        if obj is None:
            raise not_found(t.info.group, t.info.resource, t.name or "")
        scale = self._scale_obj(t, obj)
        if req.method == "GET":
            return Response.json(scale)
        if req.method == "PUT":
            new_scale = self._json_body(req)
        elif req.method == "PATCH":
            ctype = _media_type(req)
            if ctype == JSON_PATCH:
                new_scale = apply_json_patch(scale, self._json_body(req))
            elif ctype in (MERGE, STRATEGIC):
                new_scale = json_merge(scale, self._json_body(req))
            else:
                raise unsupported_media(ctype)
        else:
            raise method_not_allowed()
        if not isinstance(new_scale, dict):
            raise bad_request("the body must be a Scale object")
        replicas = (new_scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid(
                "Scale",
                t.name or "",
                [
                    (
                        "spec.replicas",
                        "FieldValueInvalid",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                    )
                ],
                "autoscaling",
            )
        new = clone(obj)
        new.setdefault("spec", {})["replicas"] = replicas
        rv = (new_scale.get("metadata") or {}).get("resourceVersion")
        new["metadata"]["resourceVersion"] = rv or obj["metadata"]["resourceVersion"]
        updated = self.store.update(t.info.gr, new, dry_run=self._dry_run(req))
        return Response.json(self._scale_obj(t, updated))

    def _log(self, req: Request, t: Target) -> Response:
        ns = self._ns(t)
        pod = self.store.get(PODS, ns, t.name)
        if pod is None:
            raise not_found("", "pods", t.name or "")
        containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        init = [c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or []]
        container = req.arg("container")
        if not container:
            if len(containers) != 1:
                raise bad_request(
                    f"a container name must be specified for pod {t.name}, choose one of: "
                    f"[{' '.join(str(c) for c in containers)}]"
                    + (f" or one of the init containers: [{' '.join(str(c) for c in init)}]" if init else "")
                )
            container = str(containers[0])
        if container not in containers and container not in init:
            raise bad_request(f"container {container} is not valid for pod {t.name}")
        previous = _flag(req, "previous")
        status = pod.get("status") or {}
        # a new list: extending the stored pod's own list would change the pod in the store
        statuses = [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
        cs = next((s for s in statuses if s.get("name") == container), None)
        if not previous:
            state = (cs or {}).get("state") or {}
            if cs is None or (state.get("waiting") and not (cs.get("lastState") or {}).get("terminated")):
                reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
                # the kubelet's wording for image-pull states
                reason = {
                    "ImagePullBackOff": "trying and failing to pull image",
                    "ErrImagePull": "image can't be pulled",
                }.get(reason, reason)
                raise bad_request(f'container "{container}" in pod "{t.name}" is waiting to start: {reason}')
        tail = since_time = None
        limit_bytes: int | None = None
        try:
            if req.arg("tailLines"):
                tail = int(req.arg("tailLines") or 0)
            if req.arg("sinceSeconds"):
                since_time = self.twin.now() - int(req.arg("sinceSeconds") or 0)
            if req.arg("sinceTime"):
                from ...k8s.times import parse_rfc3339

                since_time = parse_rfc3339(req.arg("sinceTime") or "")
            if req.arg("limitBytes"):
                limit_bytes = int(req.arg("limitBytes") or 0)
        except ValueError as e:
            raise bad_request(f"invalid log option: {e}") from e
        timestamps = _flag(req, "timestamps")
        logs = getattr(self.twin, "logs", None)
        text = ""
        if logs is not None:
            try:
                text = logs.pod_log(
                    ns,
                    t.name,
                    container,
                    previous=previous,
                    since_time=since_time,
                    tail_lines=tail,
                    timestamps=timestamps,
                )
            except LookupError as e:
                raise bad_request(str(e.args[0] if e.args else e)) from e
        elif previous:
            raise bad_request(f'previous terminated container "{container}" in pod "{t.name}" not found')
        if limit_bytes is not None:
            text = text.encode()[:limit_bytes].decode("utf-8", "ignore")
        data = text.encode()
        if _flag(req, "follow"):
            # keep streaming new lines of this container instance until it ends (telemetry/logs.py)
            follow = getattr(logs, "follow", None)
            rest: Iterator[bytes] = iter(())
            if follow is not None and not previous and limit_bytes is None:
                rest = follow(ns, t.name, container, after=self.twin.now() + 1e-6, timestamps=timestamps)
            return Response(
                200, itertools.chain([data] if data else [], rest), {"Content-Type": "text/plain"}
            )
        return Response(200, data, {"Content-Type": "text/plain"})

    def _evict(self, req: Request, t: Target) -> Response:
        ns = self._ns(t)
        pod = self.store.get(PODS, ns, t.name)
        if pod is None:
            raise not_found("", "pods", t.name or "")
        body = self._json_body(req) if req.body else {}
        opts = (body.get("deleteOptions") if isinstance(body, dict) else None) or {}
        dry_run = bool(self._dry_run(req) or opts.get("dryRun"))
        check_eviction(self.store, pod, self.twin.now(), dry_run)  # the pod's disruption budget
        if not dry_run:
            delete_pod(self.store, pod, opts.get("gracePeriodSeconds"))  # graceful, like a DELETE
        return Response.json(_status_ok(), 201)

    def _bind(self, req: Request, t: Target) -> Response:
        ns = self._ns(t)
        pod = self.store.get(PODS, ns, t.name)
        if pod is None:
            raise not_found("", "pods", t.name or "")
        body = self._json_body(req)
        node = ((body or {}).get("target") or {}).get("name") if isinstance(body, dict) else None
        if not node:
            raise invalid("Binding", t.name or "", [("target.name", "FieldValueRequired", "Required value")])
        if (pod.get("spec") or {}).get("nodeName"):
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{t.name}": pod '
                f'{t.name} is already assigned to node "{pod["spec"]["nodeName"]}"',
            )
        new = clone(pod)
        new["spec"]["nodeName"] = node
        self.store.update(PODS, new)
        return Response.json(_status_ok(), 201)

    # ------------------------------------------------------------------ metrics.k8s.io
    def _service_proxy(self, req: Request, t: Target) -> Response:
        """A request to the app through the service proxy (``twin/app/front_door.py``; its refusals are
        the API server's ``ApiError``)."""
        assert t.namespace is not None and t.name is not None
        behaviour = getattr(self.twin, "behaviour", None)
        if behaviour is None:  # plain manifests: nothing behind any port
            raise ApiError(503, "ServiceUnavailable", f'no endpoints available for service "{t.name}"')
        path = t.proxy_path or "/"
        if req.query:
            path += "?" + urlencode([(k, v) for k, vs in req.query.items() for v in vs])
        answer = behaviour.front_door().request(t.namespace, t.name, req.method, path)
        return Response(
            answer.status, answer.body.encode(), {"Content-Type": answer.content_type, **answer.headers}
        )

    def _metrics(self, req: Request, t: Target) -> Response:
        now = self.twin.now()
        label_reqs = parse_label_selector(req.arg("labelSelector"))
        if t.info.resource == "pods":
            pods = self.store.list(PODS, t.namespace)
            if t.name is not None:
                pod = self.store.get(PODS, t.namespace or "", t.name)
                pm = pod_metrics(self.twin, pod, now) if pod else None
                if pm is None:
                    raise not_found("metrics.k8s.io", "pods", t.name)
                return Response.json(pm)
            items = [
                pm for p in pods if labels_match(label_reqs, p) and (pm := pod_metrics(self.twin, p, now))
            ]
        else:
            nodes = self.store.list(GroupResource("", "nodes"))
            if t.name is not None:
                node = self.store.get(GroupResource("", "nodes"), "", t.name)
                if node is None:
                    raise not_found("metrics.k8s.io", "nodes", t.name)
                return Response.json(node_metrics(self.twin, node, now))
            items = [node_metrics(self.twin, n, now) for n in nodes if labels_match(label_reqs, n)]
        return Response.json(
            {"kind": t.info.list_kind_name, "apiVersion": t.info.api_version, "metadata": {}, "items": items}
        )

    # ------------------------------------------------------------------ componentstatuses (deprecated, served)
    def _component_statuses(self, req: Request, t: Target) -> Response:
        if req.method != "GET" or t.sub is not None or t.watch_prefix or _flag(req, "watch"):
            raise method_not_allowed()
        objs: list[Obj] = [
            {
                "kind": "ComponentStatus",
                "apiVersion": "v1",
                "metadata": {"name": name},
                "conditions": [{"type": "Healthy", "status": "True", "message": message}],
            }
            for name, message in COMPONENTS
        ]
        label_reqs = parse_label_selector(req.arg("labelSelector"))
        objs = [o for o in objs if labels_match(label_reqs, o)]
        if t.name is not None:
            objs = [o for o in objs if o["metadata"]["name"] == t.name]
            if not objs:
                raise not_found("", "componentstatuses", t.name)
            resp = self._respond(req, t, objs[0])
        elif _table_include(req) is not None:
            resp = Response.json(
                to_table(t.info, objs, self.twin.now(), include_object=_table_include(req) or "")
            )
        else:
            resp = Response.json(
                {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": objs}
            )
        resp.headers["Warning"] = '299 - "v1 ComponentStatus is deprecated in v1.19+"'
        return resp

    # ------------------------------------------------------------------ events.k8s.io/v1 (a view of core events)
    def _events_v1(self, req: Request, t: Target) -> Response:
        if req.method != "GET" or t.sub is not None:
            raise ApiError(
                405,
                "MethodNotAllowed",
                "events.k8s.io/v1 is served read-only by the itbench twin; write core/v1 events",
            )
        core = Target(self.registry.get("", "v1", "events") or t.info, t.namespace, t.name, None)
        if t.name is not None:
            obj = self.store.get(CORE_EVENTS, t.namespace or "", t.name)
            if obj is None:
                raise not_found("events.k8s.io", "events", t.name)
            return Response.json(core_to_events_v1(obj))
        if _flag(req, "watch"):
            raise ApiError(
                405, "MethodNotAllowed", "watch is not served for events.k8s.io/v1; watch core/v1 events"
            )
        objs = self._select(req, core)
        return Response.json(
            {
                "kind": "EventList",
                "apiVersion": "events.k8s.io/v1",
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": [core_to_events_v1(o) for o in objs],
            }
        )


def core_to_events_v1(o: Obj) -> Obj:
    src = o.get("source") or {}
    out: Obj = {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": o.get("metadata", {}),
        "eventTime": o.get("eventTime"),
        "reason": o.get("reason"),
        "regarding": o.get("involvedObject"),
        "note": o.get("message"),
        "type": o.get("type"),
        "reportingController": o.get("reportingComponent") or src.get("component"),
        "reportingInstance": o.get("reportingInstance") or src.get("host"),
        "deprecatedSource": src or None,
        "deprecatedFirstTimestamp": o.get("firstTimestamp"),
        "deprecatedLastTimestamp": o.get("lastTimestamp"),
        "deprecatedCount": o.get("count"),
        "series": o.get("series"),
    }
    if o.get("action"):
        out["action"] = o["action"]
    return {k: v for k, v in out.items() if v is not None}


def make_kube_handler(twin: Any) -> Handler:
    """The Kubernetes API handler for ``twin`` (serve it with ``HttpEndpoint``)."""
    api = KubeApiServer(twin)

    def handler(req: Request) -> Response:
        return api(req)

    return handler


__all__ = ["KubeApiServer", "make_kube_handler", "partial_metadata"]
