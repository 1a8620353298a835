"""OpenAPI documents in protobuf: the gnostic ``openapi.v2.Document`` kubectl asks ``/openapi/v2`` for, and
``openapi.v3.Document`` for ``/openapi/v3/<group-version>`` when a client asks for it.

kubectl fetches the v2 document with ``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``
(client-side validation of kinds the v3 documents do not cover, and the v2 field-validation check)
and parses the answer as protobuf; a JSON answer fails with "proto: cannot parse invalid wire-format
data". This module encodes the JSON document :class:`~.openapi.OpenAPI` builds into that message.
Field numbers are those of gnostic's ``openapiv2/OpenAPIv2.proto`` (``openapiv3/OpenAPIv3.proto``); extensions (``x-...``) and
``enum`` / ``default`` / ``example`` values are ``Any`` messages carrying YAML text (JSON is YAML),
as gnostic writes them.
"""

from __future__ import annotations

import json
import struct
from typing import Any

Obj = dict[str, Any]

_VARINT, _I64, _LEN = 0, 1, 2


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes(field: int, data: bytes) -> bytes:
    return _key(field, _LEN) + _varint(len(data)) + data


def _str(field: int, s: Any) -> bytes:
    return _bytes(field, str(s).encode("utf-8", "surrogatepass")) if s not in (None, "") else b""


def _bool(field: int, v: Any) -> bytes:
    return _key(field, _VARINT) + b"\x01" if v is True else b""


def _int(field: int, v: Any) -> bytes:
    if isinstance(v, bool) or not isinstance(v, int | float) or not v:
        return b""
    return _key(field, _VARINT) + _varint(int(v))


def _double(field: int, v: Any) -> bytes:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return b""
    return _key(field, _I64) + struct.pack("<d", float(v))


def _any(field: int, value: Any) -> bytes:
    """An ``openapi.v2.Any`` holding ``value`` as YAML (field 2)."""
    return _bytes(field, _bytes(2, json.dumps(value, separators=(",", ":")).encode()))


def _named_any(field: int, name: str, value: Any) -> bytes:
    return _bytes(field, _str(1, name) + _any(2, value))


def _extensions(field: int, obj: Obj) -> bytes:
    return b"".join(_named_any(field, k, v) for k, v in obj.items() if k.startswith("x-"))


# Schema field numbers (openapi.v2.Schema)
_S_STR = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13, "discriminator": 26}
_S_INT = {
    "maxLength": 11,
    "minLength": 12,
    "maxItems": 14,
    "minItems": 15,
    "maxProperties": 17,
    "minProperties": 18,
}
_S_DOUBLE = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_S_BOOL = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}


def schema(s: Any) -> bytes:
    """An ``openapi.v2.Schema`` message."""
    if not isinstance(s, dict):
        return b""
    out = bytearray()
    for k, v in s.items():
        if k in _S_STR:
            out += _str(_S_STR[k], v)
        elif k in _S_INT:
            out += _int(_S_INT[k], v)
        elif k in _S_DOUBLE:
            out += _double(_S_DOUBLE[k], v)
        elif k in _S_BOOL:
            out += _bool(_S_BOOL[k], v)
        elif k == "default":
            out += _any(5, v)
        elif k == "example":
            out += _any(30, v)
        elif k == "required" and isinstance(v, list):
            out += b"".join(_str(19, r) for r in v)
        elif k == "enum" and isinstance(v, list):
            out += b"".join(_any(20, e) for e in v)
        elif k == "additionalProperties":
            if isinstance(v, bool):
                out += _bytes(21, _key(2, _VARINT) + (b"\x01" if v else b"\x00"))
            elif isinstance(v, dict):
                out += _bytes(21, _bytes(1, schema(v)))
        elif k == "type":
            types = v if isinstance(v, list) else [v]
            out += _bytes(22, b"".join(_str(1, t) for t in types))
        elif k == "items":
            items = v if isinstance(v, list) else [v]
            out += _bytes(23, b"".join(_bytes(1, schema(i)) for i in items))
        elif k == "allOf" and isinstance(v, list):
            out += b"".join(_bytes(24, schema(i)) for i in v)
        elif k == "properties" and isinstance(v, dict):
            out += _bytes(25, b"".join(_bytes(1, _str(1, n) + _bytes(2, schema(p))) for n, p in v.items()))
    out += _extensions(31, s)
    return bytes(out)


_OPS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _operation(op: Obj) -> bytes:
    out = bytearray()
    for t in op.get("tags") or []:
        out += _str(1, t)
    out += _str(2, op.get("summary")) + _str(3, op.get("description")) + _str(5, op.get("operationId"))
    for t in op.get("produces") or []:
        out += _str(6, t)
    for t in op.get("consumes") or []:
        out += _str(7, t)
    for p in op.get("parameters") or []:
        if isinstance(p, dict) and "$ref" in p:
            out += _bytes(8, _bytes(2, _str(1, p["$ref"])))  # ParametersItem.json_reference
        elif isinstance(p, dict) and p.get("in") == "query":
            sub = (
                _bool(1, p.get("required"))
                + _str(2, "query")
                + _str(3, p.get("description"))
                + _str(4, p.get("name"))
                + _str(6, p.get("type") or "string")
                + _bool(20, p.get("uniqueItems"))
            )  # Parameter.non_body_parameter.query_parameter_sub_schema
            out += _bytes(8, _bytes(1, _bytes(2, _bytes(3, sub))))
    out += _bool(11, op.get("deprecated"))
    out += _extensions(13, op)
    return bytes(out)


def _path_item(item: Obj) -> bytes:
    out = bytearray()
    for method, num in _OPS.items():
        op = item.get(method)
        if isinstance(op, dict):
            out += _bytes(num, _operation(op))
    out += _extensions(10, item)
    return bytes(out)


def document(doc: Obj) -> bytes:
    """The ``openapi.v2.Document`` message for a swagger 2.0 JSON document."""
    info = doc.get("info") or {}
    out = bytearray(_str(1, doc.get("swagger", "2.0")))
    out += _bytes(
        2, _str(1, info.get("title")) + _str(2, info.get("version")) + _str(3, info.get("description"))
    )
    paths = doc.get("paths") or {}
    out += _bytes(8, b"".join(_bytes(2, _str(1, p) + _bytes(2, _path_item(v))) for p, v in paths.items()))
    defs = doc.get("definitions") or {}
    out += _bytes(9, b"".join(_bytes(1, _str(1, n) + _bytes(2, schema(s))) for n, s in defs.items()))
    out += _extensions(16, doc)
    return bytes(out)


# ---------------------------------------------------------------------------------------------- v3
# gnostic's openapiv3/OpenAPIv3.proto: Document, Paths, PathItem, Operation, Components, Schema ...
_S3_STR = {"title": 9, "pattern": 17, "type": 25, "description": 34, "format": 35}
_S3_INT = {
    "maxLength": 15,
    "minLength": 16,
    "maxItems": 18,
    "minItems": 19,
    "maxProperties": 21,
    "minProperties": 22,
}
_S3_DOUBLE = {"multipleOf": 10, "maximum": 11, "minimum": 13}
_S3_BOOL = {
    "nullable": 1,
    "readOnly": 3,
    "writeOnly": 4,
    "deprecated": 8,
    "exclusiveMaximum": 12,
    "exclusiveMinimum": 14,
    "uniqueItems": 20,
}


def schema_or_reference_v3(s: Any) -> bytes:
    """An ``openapi.v3.SchemaOrReference``: a Reference when the schema is a bare ``$ref``."""
    if isinstance(s, dict) and "$ref" in s:
        return _bytes(2, _str(1, s["$ref"]) + _str(3, s.get("description")))
    return _bytes(1, schema_v3(s))


def _default_v3(v: Any) -> bytes:
    """``DefaultType`` holds a number, a boolean or a string; other defaults (``{}``) are left out."""
    if isinstance(v, bool):
        return _bytes(33, _key(2, _VARINT) + (b"\x01" if v else b"\x00"))
    if isinstance(v, int | float):
        return _bytes(33, _key(1, _I64) + struct.pack("<d", float(v)))
    if isinstance(v, str):
        return _bytes(33, _bytes(3, v.encode("utf-8", "surrogatepass")))
    return b""


def schema_v3(s: Any) -> bytes:
    """An ``openapi.v3.Schema`` message."""
    if not isinstance(s, dict):
        return b""
    out = bytearray()
    for k, v in s.items():
        if k in _S3_STR:
            out += _str(_S3_STR[k], v if k != "type" or not isinstance(v, list) else (v[0] if v else ""))
        elif k in _S3_INT:
            out += _int(_S3_INT[k], v)
        elif k in _S3_DOUBLE:
            out += _double(_S3_DOUBLE[k], v)
        elif k in _S3_BOOL:
            out += _bool(_S3_BOOL[k], v)
        elif k == "example":
            out += _any(7, v)
        elif k == "required" and isinstance(v, list):
            out += b"".join(_str(23, r) for r in v)
        elif k == "enum" and isinstance(v, list):
            out += b"".join(_any(24, e) for e in v)
        elif k in ("allOf", "oneOf", "anyOf") and isinstance(v, list):
            num = {"allOf": 26, "oneOf": 27, "anyOf": 28}[k]
            out += b"".join(_bytes(num, schema_or_reference_v3(i)) for i in v)
        elif k == "not" and isinstance(v, dict):
            out += _bytes(29, schema_v3(v))
        elif k == "items":
            items = v if isinstance(v, list) else [v]
            out += _bytes(30, b"".join(_bytes(1, schema_or_reference_v3(i)) for i in items))
        elif k == "properties" and isinstance(v, dict):
            named = b"".join(
                _bytes(1, _str(1, n) + _bytes(2, schema_or_reference_v3(p))) for n, p in v.items()
            )
            out += _bytes(31, named)
        elif k == "additionalProperties":
            if isinstance(v, bool):
                out += _bytes(32, _key(2, _VARINT) + (b"\x01" if v else b"\x00"))
            elif isinstance(v, dict):
                out += _bytes(32, _bytes(1, schema_or_reference_v3(v)))
        elif k == "default":
            out += _default_v3(v)
    out += _extensions(36, s)
    return bytes(out)


def _media_types_v3(content: Any) -> bytes:
    if not isinstance(content, dict):
        return b""
    named = b"".join(
        _bytes(1, _str(1, name) + _bytes(2, _bytes(1, schema_or_reference_v3((mt or {}).get("schema")))))
        for name, mt in content.items()
        if isinstance(mt, dict)
    )
    return named


def _operation_v3(op: Obj) -> bytes:
    out = bytearray()
    for t in op.get("tags") or []:
        out += _str(1, t)
    out += _str(2, op.get("summary")) + _str(3, op.get("description")) + _str(5, op.get("operationId"))
    for p in op.get("parameters") or []:
        if not isinstance(p, dict):
            continue
        if "$ref" in p:
            out += _bytes(6, _bytes(2, _str(1, p["$ref"])))
            continue
        param = (
            _str(1, p.get("name"))
            + _str(2, p.get("in"))
            + _str(3, p.get("description"))
            + _bool(4, p.get("required"))
        )
        if isinstance(p.get("schema"), dict):
            param += _bytes(10, schema_or_reference_v3(p["schema"]))
        out += _bytes(6, _bytes(1, param))
    body = op.get("requestBody")
    if isinstance(body, dict):
        rb = _str(1, body.get("description")) + _bytes(2, _media_types_v3(body.get("content")))
        out += _bytes(7, _bytes(1, rb + _bool(3, body.get("required"))))
    responses = op.get("responses")
    if isinstance(responses, dict):
        named = b"".join(
            _bytes(
                2,
                _str(1, code)
                + _bytes(
                    2,
                    _bytes(1, _str(1, r.get("description")) + _bytes(3, _media_types_v3(r.get("content")))),
                ),
            )
            for code, r in responses.items()
            if isinstance(r, dict)
        )
        out += _bytes(8, named)
    out += _bool(10, op.get("deprecated"))
    out += _extensions(13, op)
    return bytes(out)


_OPS_V3 = {"get": 4, "put": 5, "post": 6, "delete": 7, "options": 8, "head": 9, "patch": 10}


def document_v3(doc: Obj) -> bytes:
    """The ``openapi.v3.Document`` message for an OpenAPI 3.0 JSON document."""
    info = doc.get("info") or {}
    out = bytearray(_str(1, doc.get("openapi", "3.0.0")))
    out += _bytes(
        2, _str(1, info.get("title")) + _str(2, info.get("description")) + _str(6, info.get("version"))
    )
    items = bytearray()
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        pi = bytearray()
        for method, num in _OPS_V3.items():
            if isinstance(item.get(method), dict):
                pi += _bytes(num, _operation_v3(item[method]))
        pi += _extensions(14, item)
        items += _bytes(1, _str(1, path) + _bytes(2, bytes(pi)))
    out += _bytes(4, bytes(items))
    schemas = (doc.get("components") or {}).get("schemas") or {}
    named = b"".join(_bytes(1, _str(1, n) + _bytes(2, schema_or_reference_v3(s))) for n, s in schemas.items())
    out += _bytes(5, _bytes(1, named))
    out += _extensions(9, doc)
    return bytes(out)
