"""OpenAPI v3 (per group-version) and v2 documents, derived at runtime from the ``kubernetes``
client's model classes (built-in kinds) and from CRD schemas (custom resources).

kubectl uses the v3 documents for ``explain``, for client-side ``apply`` patch metadata
(``x-kubernetes-patch-merge-key``) and to decide whether the server validates fields itself (a PATCH
operation with a ``fieldValidation`` query parameter, tagged with ``x-kubernetes-group-version-kind``).
Documents are cached per registry generation.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import deque
from typing import Any

from ...k8s.kinds import BUILTIN, ResourceInfo
from .models import FieldType, enum_values, model_doc, model_fields, patch_meta
from .resources import ResourceRegistry
from .store import clone

Schema = dict[str, Any]
Obj = dict[str, Any]

META_PKG = "io.k8s.apimachinery.pkg.apis.meta.v1"
_META_KINDS = {
    "ObjectMeta",
    "ListMeta",
    "LabelSelector",
    "LabelSelectorRequirement",
    "OwnerReference",
    "ManagedFieldsEntry",
    "Status",
    "StatusDetails",
    "StatusCause",
    "Condition",
    "DeleteOptions",
    "Preconditions",
    "APIResource",
    "APIResourceList",
    "APIGroup",
    "APIGroupList",
    "APIVersions",
    "GroupVersionForDiscovery",
    "ServerAddressByClientCIDR",
    "WatchEvent",
    "FieldSelectorRequirement",
}
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
TIME = f"{META_PKG}.Time"

_GROUP_PKG = {
    "": "core",
    "apps": "apps",
    "autoscaling": "autoscaling",
    "batch": "batch",
    "networking.k8s.io": "networking",
    "discovery.k8s.io": "discovery",
    "events.k8s.io": "events",
    "rbac.authorization.k8s.io": "rbac",
    "policy": "policy",
    "storage.k8s.io": "storage",
    "scheduling.k8s.io": "scheduling",
    "coordination.k8s.io": "coordination",
}


def _strip_version(model: str) -> tuple[str, str]:
    """``V1beta1Foo`` → ("v1beta1", "Foo"); ``CoreV1Event`` → ("v1", "Event")."""
    import re

    m = re.match(
        r"^(?:Core|Events|Discovery|Storage|Apiextensions|Authentication|Rbac|Flowcontrol|Admissionregistration|Resource)?(V\d+(?:alpha\d+|beta\d+)?)(.+)$",
        model,
    )
    if not m:
        return "v1", model
    return m.group(1).lower(), m.group(2)


@functools.cache
def _definition_names() -> dict[str, str]:
    """model class → upstream-style definition name (``io.k8s.api.apps.v1.Deployment``)."""
    names: dict[str, str] = {}
    for info in BUILTIN:
        if not info.model or info.group == "apiextensions.k8s.io":
            continue
        pkg = _GROUP_PKG.get(info.group, info.group.split(".")[0])
        queue = deque([info.model])
        while queue:
            m = queue.popleft()
            if m in names:
                continue
            version, kind = _strip_version(m)
            if kind in _META_KINDS:
                names[m] = f"{META_PKG}.{kind}"
            else:
                names[m] = f"io.k8s.api.{pkg}.{version}.{kind}"
            for f in model_fields(m).values():
                queue.extend(_models_in(f.type))
    return names


def _models_in(t: FieldType) -> list[str]:
    if t.kind == "model":
        return [t.name]
    if t.item is not None:
        return _models_in(t.item)
    return []


def definition_name(model: str) -> str:
    known = _definition_names().get(model)
    if known:
        return known
    version, kind = _strip_version(model)
    if kind in _META_KINDS:
        return f"{META_PKG}.{kind}"
    if model.startswith("V1CustomResource") or model.startswith("V1JSONSchemaProps"):
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{kind}"
    return f"io.k8s.api.{version}.{kind}"


_INT_OR_STRING_DOC = (
    "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and "
    "unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON "
    "field that can accept a name or number."
)


class _Builder:
    """Collects schemas reachable from some roots, in v3 (``components/schemas``) or v2 style."""

    def __init__(self, v3: bool) -> None:
        self.v3 = v3
        self.schemas: dict[str, Schema] = {}
        self.prefix = "#/components/schemas/" if v3 else "#/definitions/"

    def ref(self, name: str, description: str = "") -> Schema:
        if self.v3:
            s: Schema = {"allOf": [{"$ref": self.prefix + name}]}
        else:
            s = {"$ref": self.prefix + name}
        if description:
            s["description"] = description
        return s

    def add_scalar_defs(self) -> None:
        # v3 documents describe the two-typed scalars with oneOf and no "type" (so kubectl explain
        # names them <IntOrString> / <Quantity>); v2 documents call them strings
        int_or_string: Schema = {"description": _INT_OR_STRING_DOC, "format": "int-or-string"}
        quantity: Schema = {"description": "Quantity is a fixed-point representation of a number."}
        if self.v3:
            int_or_string["oneOf"] = [{"type": "integer"}, {"type": "string"}]
            quantity["oneOf"] = [{"type": "string"}, {"type": "number"}]
        else:
            int_or_string["type"] = quantity["type"] = "string"
        self.schemas.setdefault(INT_OR_STRING, int_or_string)
        self.schemas.setdefault(QUANTITY, quantity)
        self.schemas.setdefault(
            TIME,
            {
                "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and "
                "JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
                "format": "date-time",
                "type": "string",
            },
        )

    def field_schema(self, t: FieldType, description: str = "") -> Schema:
        s: Schema
        item: Schema
        if t.kind == "scalar":
            s = {"type": t.name}
            if t.name == "integer":
                s["format"] = "int32"
        elif t.kind == "time":
            self.add_scalar_defs()
            return self.ref(TIME, description)
        elif t.kind == "int-or-string":
            self.add_scalar_defs()
            return self.ref(INT_OR_STRING, description)
        elif t.kind == "quantity":
            self.add_scalar_defs()
            return self.ref(QUANTITY, description)
        elif t.kind == "model":
            self.model(t.name)
            return self.ref(definition_name(t.name), description)
        elif t.kind in ("list", "map"):
            item = self.field_schema(t.item) if t.item else {"type": "object"}
            if self.v3 and "allOf" in item and "description" not in item:
                item = {"$ref": item["allOf"][0]["$ref"]}
            if t.kind == "list":
                s = {"type": "array", "items": item}
            else:
                s = {"type": "object", "additionalProperties": item}
        else:
            s = {"type": "object"}
        if description:
            s["description"] = description
        return s

    def model(self, model: str) -> str:
        name = definition_name(model)
        if name in self.schemas:
            return name
        self.schemas[name] = {}  # placeholder against recursion
        props: Schema = {}
        required = []
        for fname, finfo in sorted(model_fields(model).items()):
            values = enum_values(model, fname)
            description = finfo.description
            if values:  # upstream's description lists the values too
                listed = "\n".join(f' - `"{v}"`' for v in values)
                description = f"{description}\n\nPossible enum values:\n{listed}" if description else listed
            fs = self.field_schema(finfo.type, description)
            if values:
                fs["enum"] = list(values)
            strategy, key = patch_meta(model, fname)
            if strategy:
                fs["x-kubernetes-patch-strategy"] = strategy
                if key:
                    fs["x-kubernetes-patch-merge-key"] = key
                    fs["x-kubernetes-list-type"] = "map"
                    fs["x-kubernetes-list-map-keys"] = [key]
            props[fname] = fs
            if finfo.required:
                required.append(fname)
        schema: Schema = {"description": model_doc(model), "type": "object", "properties": props}
        if required:
            schema["required"] = required
        self.schemas[name] = schema
        return name


def _gvk(info: ResourceInfo) -> list[dict[str, str]]:
    return [{"group": info.group, "kind": info.kind, "version": info.version}]


def _schema_name(b: _Builder, info: ResourceInfo) -> str | None:
    """The schema (added to ``b``) describing ``info``'s kind; None when it has none."""
    if info.crd is not None:
        return _crd_schema(b, info)
    if info.model:
        return b.model(info.model)
    return None


def _crd_schema(b: _Builder, info: ResourceInfo) -> str:
    version = info.crd_version
    raw = ((version.get("schema") or {}).get("openAPIV3Schema")) or {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    schema = clone(raw)
    props = schema.setdefault("properties", {})
    props.setdefault(
        "apiVersion", {"type": "string", "description": "APIVersion defines the versioned schema."}
    )
    props.setdefault(
        "kind", {"type": "string", "description": "Kind is a string value representing the REST resource."}
    )
    b.model("V1ObjectMeta")
    props["metadata"] = b.ref(definition_name("V1ObjectMeta"), "Standard object's metadata.")
    schema.setdefault("type", "object")
    rev = ".".join(reversed(info.group.split(".")))
    name = f"{rev}.{info.version}.{info.kind}"
    b.schemas[name] = schema
    return name


_PARAM_DESC = {
    "dryRun": "When present, indicates that modifications should not be persisted.",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is making these changes.",
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in the request "
    "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
    "force": 'Force is going to "force" Apply requests.',
}


def _query_params(*names: str) -> list[Schema]:
    return [
        {
            "description": _PARAM_DESC.get(n, n),
            "in": "query",
            "name": n,
            "schema": {"type": "boolean" if n == "force" else "string", "uniqueItems": True},
        }
        for n in names
    ]


def _paths(info: ResourceInfo, schema_name: str, prefix: str) -> dict[str, Any]:
    base = f"/api/{info.version}" if not info.group else f"/apis/{info.group}/{info.version}"
    coll = (
        f"{base}/namespaces/{{namespace}}/{info.resource}" if info.namespaced else f"{base}/{info.resource}"
    )
    item = coll + "/{name}"
    ext = {"x-kubernetes-group-version-kind": _gvk(info)[0]}
    ref = {"$ref": prefix + schema_name}
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    body = {"content": {"*/*": {"schema": ref}}, "required": True}
    patch_types = [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ]
    if info.crd is None:  # custom resources take no strategic merge patch (kubectl then sends a merge patch)
        patch_types.append("application/strategic-merge-patch+json")
    patch_body = {
        "content": {t: {"schema": {"type": "object"}} for t in patch_types},
        "required": True,
    }
    verbs = set(info.verbs)
    coll_ops: dict[str, Any] = {}
    item_ops: dict[str, Any] = {}
    if "list" in verbs:
        coll_ops["get"] = {"x-kubernetes-action": "list", **ext, "responses": ok}
    if "create" in verbs:
        coll_ops["post"] = {
            "x-kubernetes-action": "post",
            **ext,
            "requestBody": body,
            "responses": ok,
            "parameters": _query_params("dryRun", "fieldManager", "fieldValidation"),
        }
    if "get" in verbs:
        item_ops["get"] = {"x-kubernetes-action": "get", **ext, "responses": ok}
    if "update" in verbs:
        item_ops["put"] = {
            "x-kubernetes-action": "put",
            **ext,
            "requestBody": body,
            "responses": ok,
            "parameters": _query_params("dryRun", "fieldManager", "fieldValidation"),
        }
    if "patch" in verbs:
        item_ops["patch"] = {
            "x-kubernetes-action": "patch",
            **ext,
            "requestBody": patch_body,
            "responses": ok,
            "parameters": _query_params("dryRun", "fieldManager", "fieldValidation", "force"),
        }
    if "delete" in verbs:
        item_ops["delete"] = {"x-kubernetes-action": "delete", **ext, "responses": ok}
    out = {}
    if coll_ops:
        out[coll] = coll_ops
    if item_ops:
        out[item] = item_ops
    return out


def _gv_key(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


_BUILTIN_DOCS: dict[str, bytes] = {}
"""Documents of group-versions served only by built-in kinds: the same for every twin."""


class OpenAPI:
    """Per-registry document cache."""

    def __init__(self, registry: ResourceRegistry) -> None:
        self.registry = registry
        self._gen = -1
        self._v3: dict[str, bytes] = {}
        self._v3_hash: dict[str, str] = {}
        self._v2: bytes | None = None
        self._v2_pb: bytes | None = None
        self._v3_pb: dict[str, bytes] = {}

    def _check(self) -> None:
        if self._gen != self.registry.generation:
            self._gen = self.registry.generation
            self._v3.clear()
            self._v3_hash.clear()
            self._v2 = None
            self._v2_pb = None
            self._v3_pb.clear()

    def v2_proto(self) -> bytes:
        """The v2 document as the gnostic ``openapi.v2.Document`` protobuf kubectl asks for."""
        data = self.v2()
        if self._v2_pb is None:
            from .openapi_pb import document

            self._v2_pb = document(json.loads(data))
        return self._v2_pb

    def _gv_doc(self, group: str, version: str) -> dict[str, Any]:
        b = _Builder(v3=True)
        paths: dict[str, Any] = {}
        for info in self.registry.resources_in(group, version):
            name = _schema_name(b, info)
            if name is None:
                continue
            b.schemas[name] = {**b.schemas[name], "x-kubernetes-group-version-kind": _gvk(info)}
            paths.update(_paths(info, name, b.prefix))
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths,
            "components": {"schemas": dict(sorted(b.schemas.items()))},
        }

    def v3_gv(self, key: str) -> bytes | None:
        """The JSON document for ``api/v1`` or ``apis/<g>/<v>`` (None if not served)."""
        self._check()
        if key in self._v3:
            return self._v3[key]
        parts = key.split("/")
        if parts[0] == "api" and len(parts) == 2:
            group, version = "", parts[1]
        elif parts[0] == "apis" and len(parts) == 3:
            group, version = parts[1], parts[2]
        else:
            return None
        infos = self.registry.resources_in(group, version)
        if not infos:
            return None
        builtin = all(i.crd is None for i in infos)
        data = _BUILTIN_DOCS.get(key) if builtin else None
        if data is None:
            data = json.dumps(self._gv_doc(group, version), separators=(",", ":")).encode()
            if builtin:
                _BUILTIN_DOCS[key] = data
        self._v3[key] = data
        self._v3_hash[key] = hashlib.sha512(data).hexdigest()[:128].upper()
        return data

    def v3_gv_proto(self, key: str) -> bytes | None:
        """The document of :meth:`v3_gv` as the gnostic ``openapi.v3.Document`` protobuf."""
        data = self.v3_gv(key)
        if data is None:
            return None
        if key not in self._v3_pb:
            from .openapi_pb import document_v3

            self._v3_pb[key] = document_v3(json.loads(data))
        return self._v3_pb[key]

    def v3_root(self) -> dict[str, Any]:
        self._check()
        paths = {}
        for group, versions in self.registry.group_versions().items():
            for v in versions:
                key = _gv_key(group, v)
                h = self._v3_hash.get(key)
                if h is None:
                    self.v3_gv(key)
                    h = self._v3_hash.get(key, "")
                paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={h}"}
        return {"paths": paths}

    def v2(self) -> bytes:
        self._check()
        if self._v2 is None:
            b = _Builder(v3=False)
            paths: dict[str, Any] = {}
            for info in self.registry.all():
                name = _schema_name(b, info)
                if name is None:
                    continue
                gvks = b.schemas[name].get("x-kubernetes-group-version-kind", []) + _gvk(info)
                b.schemas[name] = {**b.schemas[name], "x-kubernetes-group-version-kind": gvks}
                for p, ops in _paths(info, name, b.prefix).items():
                    paths[p] = {
                        m: {
                            k: v for k, v in op.items() if k not in ("requestBody", "responses", "parameters")
                        }
                        for m, op in ops.items()
                    }
            doc = {
                "swagger": "2.0",
                "info": {"title": "Kubernetes", "version": "v1.32.0"},
                "paths": paths,
                "definitions": dict(sorted(b.schemas.items())),
            }
            self._v2 = json.dumps(doc, separators=(",", ":")).encode()
        return self._v2
