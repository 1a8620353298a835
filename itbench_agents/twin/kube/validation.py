"""Request decoding checks (field types, unknown fields) and the apiserver's object validation (422)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...k8s.kinds import ResourceInfo
from .errors import ApiError, bad_request, invalid
from .models import FieldType, model_fields
from .selectors import labels_match, selector_from_label_selector

Obj = dict[str, Any]
Cause = tuple[str, str, str]

DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)

# ---------------------------------------------------------------------------- decoding


_GO_TYPES = {"integer": "int32", "string": "string", "boolean": "bool", "number": "float64"}


def _type_error(value: Any, t: FieldType, model: str, path: str) -> str | None:
    want = None
    if t.kind == "scalar":
        ok = {
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "boolean": isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
        }[t.name]
        want = _GO_TYPES[t.name]
    elif t.kind in ("model", "map"):
        ok = isinstance(value, dict)
        want = "map[string]string" if t.kind == "map" else "struct"
    elif t.kind == "list":
        ok = isinstance(value, list)
        want = "[]" + ("string" if t.item and t.item.kind == "scalar" else "object")
    elif t.kind in ("int-or-string", "quantity"):
        ok = isinstance(value, str | int | float) and not isinstance(value, bool)
        want = "intstr.IntOrString" if t.kind == "int-or-string" else "resource.Quantity"
    elif t.kind == "time":
        ok = isinstance(value, str)
        want = "Time"
    else:
        return None
    if ok:
        return None
    got = {dict: "object", list: "array", str: "string", bool: "bool"}.get(type(value), "number")
    return f"json: cannot unmarshal {got} into Go struct field {model[2:] if model[:1] == 'V' else model}.{path} of type {want}"


def check_fields(obj: Obj, model: str | None, nulls: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(type errors, unknown field paths) for ``obj`` against a built-in model; the paths of known
    fields set to ``null`` are appended to ``nulls``."""
    type_errors: list[str] = []
    unknown: list[str] = []
    if model:
        _walk(obj, model, "", type_errors, unknown, [] if nulls is None else nulls)
    return type_errors, unknown


def _walk(value: Any, model: str, path: str, errs: list[str], unknown: list[str], nulls: list[str]) -> None:
    if not isinstance(value, dict):
        return
    fields = model_fields(model)
    if not fields:
        return
    for k, v in value.items():
        p = f"{path}.{k}" if path else k
        f = fields.get(k)
        if f is None:
            unknown.append(p)
            continue
        if v is None:
            nulls.append(p)
            continue
        err = _type_error(v, f.type, model, p)
        if err:
            errs.append(err)
            continue
        _descend(v, f.type, p, errs, unknown, nulls)


def _descend(v: Any, t: FieldType, p: str, errs: list[str], unknown: list[str], nulls: list[str]) -> None:
    if t.kind == "model":
        _walk(v, t.name, p, errs, unknown, nulls)
    elif t.kind == "list" and t.item is not None and isinstance(v, list):
        for i, item in enumerate(v):
            if item is None:
                continue
            if t.item.kind == "model":
                _walk(item, t.item.name, f"{p}[{i}]", errs, unknown, nulls)
            elif t.item.kind == "scalar":
                err = _type_error(item, t.item, "", f"{p}[{i}]")
                if err:
                    errs.append(err)
    elif t.kind == "map" and t.item is not None and isinstance(v, dict):
        for mk, mv in v.items():
            if mv is None:
                continue
            if t.item.kind == "model":
                _walk(mv, t.item.name, f"{p}.{mk}", errs, unknown, nulls)
            elif t.item.kind == "scalar" and t.item.name == "string" and not isinstance(mv, str):
                errs.append(
                    f"json: cannot unmarshal {type(mv).__name__} into Go struct field {p} of type string"
                )


def _decode_prefix(info: ResourceInfo) -> str:
    return f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '


def strict_decoding_error(info: ResourceInfo, unknown: list[str]) -> ApiError:
    """400 for unknown fields under ``fieldValidation=Strict``, in the apiserver's wording."""
    return bad_request(
        _decode_prefix(info) + "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown)
    )


def decode_check(info: ResourceInfo, obj: Obj, mode: str) -> list[str]:
    """Raise 400 for type errors (always) and unknown fields (``fieldValidation=Strict``); return warnings
    for unknown fields otherwise (and drop them, as the apiserver's decoder does).

    A known field sent as ``null`` is dropped: Go's decoder leaves a nil slice, map or pointer, which the
    API never stores or serves (``volumes: null`` in a manifest is the same as no ``volumes``)."""
    if info.model is None:
        return []
    nulls: list[str] = []
    type_errors, unknown = check_fields(obj, info.model, nulls)
    if type_errors:
        raise bad_request(_decode_prefix(info) + type_errors[0])
    for n in nulls:
        _drop(obj, n)
    if not unknown:
        return []
    if mode == "Strict":
        raise strict_decoding_error(info, unknown)
    for u in unknown:
        _drop(obj, u)
    return [] if mode == "Ignore" else [f'unknown field "{u}"' for u in unknown]


def _drop(obj: Obj, path: str) -> None:
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    cur: Any = obj
    for part in parts[:-1]:
        if part.startswith("["):
            idx = int(part[1:-1])
            cur = cur[idx] if isinstance(cur, list) and idx < len(cur) else None
        else:
            cur = cur.get(part) if isinstance(cur, dict) else None
        if cur is None:
            return
    if isinstance(cur, dict):
        cur.pop(parts[-1], None)


# ---------------------------------------------------------------------------- validation


def _check_name(info: ResourceInfo, name: str) -> list[Cause]:
    if not name:
        return []
    if info.resource in ("services",):
        pattern, msg, limit = DNS1035_LABEL, _DNS1035_MSG, 63
    elif info.resource in ("namespaces",):
        pattern, msg, limit = DNS1123_LABEL, _LABEL_MSG, 63
    else:
        pattern, msg, limit = DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG, 253
    if len(name) > limit:
        return [
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be no more than {limit} characters',
            )
        ]
    if not pattern.fullmatch(name):
        return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {msg}')]
    return []


def _check_labels(labels: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(labels, dict):
        return causes
    for k, v in labels.items():
        name = k.split("/", 1)[-1]
        prefix = k.split("/", 1)[0] if "/" in k else ""
        if (
            not _QUALIFIED.fullmatch(name)
            or len(name) > 63
            or (prefix and not DNS1123_SUBDOMAIN.fullmatch(prefix))
        ):
            causes.append(
                (
                    path,
                    "FieldValueInvalid",
                    f"Invalid value: \"{k}\": name part must consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character",
                )
            )
        if not isinstance(v, str) or not _LABEL_VALUE.fullmatch(v) or len(v) > 63:
            causes.append(
                (
                    f"{path}",
                    "FieldValueInvalid",
                    f'Invalid value: "{v}": a valid label must be an empty string or consist of alphanumeric '
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                )
            )
    return causes


def _check_pod_spec(spec: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(spec, dict):
        return [(path, "FieldValueRequired", "Required value")]
    containers = spec.get("containers")
    if not containers:
        causes.append((f"{path}.containers", "FieldValueRequired", "Required value"))
    seen: set[str] = set()
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(kind) or []):
            cp = f"{path}.{kind}[{i}]"
            if not isinstance(c, dict):
                continue
            name = c.get("name")
            if not name:
                causes.append((f"{cp}.name", "FieldValueRequired", "Required value"))
            elif not DNS1123_LABEL.fullmatch(str(name)):
                causes.append((f"{cp}.name", "FieldValueInvalid", f'Invalid value: "{name}": {_LABEL_MSG}'))
            elif name in seen:
                causes.append((f"{cp}.name", "FieldValueDuplicate", f'Duplicate value: "{name}"'))
            else:
                seen.add(str(name))
            if not c.get("image"):
                causes.append((f"{cp}.image", "FieldValueRequired", "Required value"))
            for j, p in enumerate(c.get("ports") or []):
                port = p.get("containerPort") if isinstance(p, dict) else None
                causes.extend(_check_port_number(port, f"{cp}.ports[{j}].containerPort"))
    return causes


def _check_port_number(port: Any, path: str) -> list[Cause]:
    """The apiserver's check of a port number (an int from 1 to 65535) at ``path``."""
    if isinstance(port, int) and 0 < port < 65536:
        return []
    return [(path, "FieldValueInvalid", f"Invalid value: {port}: must be between 1 and 65535, inclusive")]


def _check_workload(obj: Obj, info: ResourceInfo) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        causes.append(
            (
                "spec.replicas",
                "FieldValueInvalid",
                f"Invalid value: {replicas}: must be greater than or equal to 0",
            )
        )
    sel = spec.get("selector")
    tmpl = spec.get("template") or {}
    tlabels = (tmpl.get("metadata") or {}).get("labels") or {}
    if info.resource in ("deployments", "replicasets", "statefulsets", "daemonsets"):
        if not sel:
            causes.append(("spec.selector", "FieldValueRequired", "Required value"))
        elif not (sel.get("matchLabels") or sel.get("matchExpressions")):
            causes.append(
                (
                    "spec.selector",
                    "FieldValueInvalid",
                    'Invalid value: "null": empty selector is invalid for deployment',
                )
            )
        elif not labels_match(selector_from_label_selector(sel), {"metadata": {"labels": tlabels}}):
            causes.append(
                (
                    "spec.template.metadata.labels",
                    "FieldValueInvalid",
                    f"Invalid value: {_go_map(tlabels)}: `selector` does not match template `labels`",
                )
            )
    causes.extend(_check_pod_spec(tmpl.get("spec"), "spec.template.spec"))
    return causes


def _go_map(m: dict[str, Any]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(m.items()))
    return f"map[string]string{{{inner}}}"


def _check_service(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    typ = spec.get("type", "ClusterIP")
    if typ not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        causes.append(
            (
                "spec.type",
                "FieldValueNotSupported",
                f'Unsupported value: "{typ}": supported values: "ClusterIP", "ExternalName", '
                '"LoadBalancer", "NodePort"',
            )
        )
    ports = spec.get("ports") or []
    if not ports and typ != "ExternalName" and spec.get("clusterIP") != "None":
        causes.append(("spec.ports", "FieldValueRequired", "Required value"))
    for i, p in enumerate(ports):
        port = p.get("port") if isinstance(p, dict) else None
        causes.extend(_check_port_number(port, f"spec.ports[{i}].port"))
        if len(ports) > 1 and isinstance(p, dict) and not p.get("name"):
            causes.append((f"spec.ports[{i}].name", "FieldValueRequired", "Required value"))
    return causes


MAX_DATA_BYTES = 1024 * 1024  # ConfigMap / Secret payload (core.MaxSecretSize)
MAX_ANNOTATION_BYTES = 256 * 1024  # all annotations of one object (TotalAnnotationSizeLimitB)


def _too_long(path: str, limit: int) -> Cause:
    return (path, "FieldValueTooLong", f"Too long: may not be more than {limit} bytes")


def _utf8_len(v: Any) -> int:
    return len(v.encode("utf-8", "surrogatepass")) if isinstance(v, str) else 0


def _b64_len(v: Any) -> int:
    """Decoded length of a base64 value (invalid padding is reported elsewhere)."""
    if not isinstance(v, str):
        return 0
    t = v.strip()
    return max(0, len(t) * 3 // 4 - (len(t) - len(t.rstrip("="))))


def _check_sizes(info: ResourceInfo, obj: Obj) -> list[Cause]:
    """The apiserver's size limits: annotations 256 KiB in all, ConfigMap/Secret data 1 MiB in all."""
    causes: list[Cause] = []
    ann = (obj.get("metadata") or {}).get("annotations")
    if (
        isinstance(ann, dict)
        and sum(_utf8_len(k) + _utf8_len(v) for k, v in ann.items()) > MAX_ANNOTATION_BYTES
    ):
        causes.append(_too_long("metadata.annotations", MAX_ANNOTATION_BYTES))
    if info.group == "" and info.resource in ("configmaps", "secrets"):
        total = 0
        for key, measure in (("data", _utf8_len), ("binaryData", _b64_len), ("stringData", _utf8_len)):
            part = obj.get(key)
            if info.resource == "secrets" and key == "data":
                measure = _b64_len
            if isinstance(part, dict):
                total += sum(measure(v) for v in part.values())
        if total > MAX_DATA_BYTES:
            causes.append(_too_long("[]", MAX_DATA_BYTES))  # the whole object, as the apiserver words it
    return causes


def validate(info: ResourceInfo, obj: Obj) -> list[Cause]:
    """The built-in 422 checks for ``obj`` of type ``info``."""
    meta = obj.get("metadata") or {}
    causes = _check_name(info, str(meta.get("name") or ""))
    causes += _check_labels(meta.get("labels"), "metadata.labels")
    causes += _check_sizes(info, obj)
    r = info.resource
    if info.group == "" and r == "pods":
        causes += _check_pod_spec(obj.get("spec"), "spec")
    elif info.group == "apps" and r in ("deployments", "replicasets", "statefulsets", "daemonsets"):
        causes += _check_workload(obj, info)
    elif info.group == "batch" and r == "jobs":
        causes += _check_pod_spec(
            ((obj.get("spec") or {}).get("template") or {}).get("spec"), "spec.template.spec"
        )
    elif info.group == "" and r == "services":
        causes += _check_service(obj)
    elif info.group == "" and r == "configmaps":
        for k in list((obj.get("data") or {}).keys()):
            if not re.fullmatch(r"[-._a-zA-Z0-9]+", k):
                causes.append(
                    (
                        f"data[{k}]",
                        "FieldValueInvalid",
                        f'Invalid value: "{k}": a valid config key must consist of alphanumeric '
                        "characters, '-', '_' or '.'",
                    )
                )
    return causes


def decode_and_validate(
    info: ResourceInfo, obj: Obj, mode: str, validators: list[Callable[[Obj], list[Cause]]] | None = None
) -> list[str]:
    """What the apiserver does to a create or update body before admission, in place: decoding (400
    for type errors, unknown fields per ``fieldValidation`` ``mode``, nulls dropped), pruning of a custom
    resource by its structural schema, then validation (422, including ``validators``). Returns the
    decoder's warnings."""
    warnings = decode_check(info, obj, mode)
    extra: list[Cause] = []
    if info.crd is not None:  # structural schema: type checks, then pruning of unknown fields
        pruned, extra, dropped = validate_custom(info, obj)
        if dropped and mode == "Strict":
            raise strict_decoding_error(info, dropped)
        obj.clear()
        obj.update(pruned)
    for check in validators or []:
        extra.extend(check(obj))
    raise_if_invalid(info, obj, extra)
    return warnings


def raise_if_invalid(info: ResourceInfo, obj: Obj, extra: list[Cause]) -> None:
    causes = validate(info, obj) + extra
    if causes:
        raise invalid(info.kind, str((obj.get("metadata") or {}).get("name") or ""), causes, info.group)


# ---------------------------------------------------------------------------- custom resources

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _type_ok(value: Any, typ: str) -> bool:
    if typ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    py = _JSON_TYPES.get(typ)
    return py is None or isinstance(value, py)


def _json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else "null"


def _go_value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_custom(
    schema: Obj, value: Any, path: str, causes: list[Cause], dropped: list[str] | None = None
) -> Any:
    """Validate (and prune unknown fields of) a custom resource against its CRD's structural schema,
    the way the apiserver does; returns the pruned value and lists pruned paths in ``dropped``."""
    if dropped is None:
        dropped = []
    if not isinstance(schema, dict) or value is None:
        return value
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, int | str) or isinstance(value, bool):
            causes.append(
                (
                    path,
                    "FieldValueTypeInvalid",
                    f"Invalid value: {_go_value(value)}: {path} in body must be of type integer,string",
                )
            )
        return value
    typ = schema.get("type")
    if typ and not _type_ok(value, typ):
        causes.append(
            (
                path,
                "FieldValueTypeInvalid",
                f"Invalid value: {_go_value(value)}: {path} in body must be of "
                f'type {typ}: "{_json_type_name(value)}"',
            )
        )
        return value
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_go_value(e) for e in schema["enum"])
        causes.append(
            (
                path,
                "FieldValueNotSupported",
                f"Unsupported value: {_go_value(value)}: supported values: {supported}",
            )
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            causes.append(
                (
                    path,
                    "FieldValueInvalid",
                    f"Invalid value: {value}: {path} in body should be greater "
                    f"than or equal to {schema['minimum']}",
                )
            )
        if "maximum" in schema and value > schema["maximum"]:
            causes.append(
                (
                    path,
                    "FieldValueInvalid",
                    f"Invalid value: {value}: {path} in body should be less than "
                    f"or equal to {schema['maximum']}",
                )
            )
    if isinstance(value, str) and "pattern" in schema:
        try:
            if not re.search(schema["pattern"], value):
                causes.append(
                    (
                        path,
                        "FieldValueInvalid",
                        f"Invalid value: \"{value}\": {path} in body should match '{schema['pattern']}'",
                    )
                )
        except re.error:
            pass
    if isinstance(value, dict):
        props = schema.get("properties")
        for req in schema.get("required") or []:
            if req not in value:
                causes.append((f"{path}.{req}", "FieldValueRequired", "Required value"))
        if props is not None:
            out = {}
            for k, v in value.items():
                if k in props:
                    out[k] = check_custom(props[k], v, f"{path}.{k}", causes, dropped)
                elif schema.get("x-kubernetes-preserve-unknown-fields"):
                    out[k] = v
                elif isinstance(schema.get("additionalProperties"), dict):
                    out[k] = check_custom(schema["additionalProperties"], v, f"{path}.{k}", causes, dropped)
                else:
                    dropped.append(f"{path}.{k}")
            return out
        if isinstance(schema.get("additionalProperties"), dict):
            return {
                k: check_custom(schema["additionalProperties"], v, f"{path}.{k}", causes, dropped)
                for k, v in value.items()
            }
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [
            check_custom(schema["items"], v, f"{path}[{i}]", causes, dropped) for i, v in enumerate(value)
        ]
    return value


def validate_custom(info: ResourceInfo, obj: Obj) -> tuple[Obj, list[Cause], list[str]]:
    """(pruned object, causes, pruned field paths) for a custom resource; metadata/apiVersion/kind are left
    alone."""
    version = info.crd_version
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return obj, [], []
    causes: list[Cause] = []
    dropped: list[str] = []
    props = schema.get("properties") or {}
    out = {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "metadata")}
    for k, v in obj.items():
        if k in out:
            continue
        if k in props:
            out[k] = check_custom(props[k], v, k, causes, dropped)
        elif schema.get("x-kubernetes-preserve-unknown-fields"):
            out[k] = v
        else:
            dropped.append(k)
    for req in schema.get("required") or []:
        if req not in obj and req not in ("apiVersion", "kind", "metadata"):
            causes.append((req, "FieldValueRequired", "Required value"))
    return out, causes, dropped
