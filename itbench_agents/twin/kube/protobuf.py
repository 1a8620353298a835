"""Decoding ``application/vnd.kubernetes.protobuf`` request bodies for the kinds kubectl's typed
generators send (``kubectl create namespace|configmap|secret|deployment|serviceaccount|quota``,
``kubectl run``, ``kubectl expose``, evictions).

A body is the ``k8s\\x00`` magic followed by a ``runtime.Unknown`` envelope whose ``raw`` field is the
object in protobuf wire format. Field numbers are those of upstream's ``generated.proto`` files,
written down here for the fields those generators fill; other fields are skipped. Kinds without a
table get a clear 415 telling the caller to send JSON or YAML (``kubectl apply -f``).
"""

from __future__ import annotations

from typing import Any

from .errors import ApiError

MAGIC = b"k8s\x00"

# message → {field number: (json name, kind, sub-message)}; kinds: str, bytes, int, bool, msg, map (str→str),
# bmap (str→bytes as base64), qmap (str→Quantity), rmsg (repeated message), rstr (repeated string), ios
# (IntOrString), time, mmap (str→message)
F = tuple[str, str, str]
SCHEMAS: dict[str, dict[int, F]] = {
    "TypeMeta": {1: ("apiVersion", "str", ""), 2: ("kind", "str", "")},
    "Unknown": {
        1: ("typeMeta", "msg", "TypeMeta"),
        2: ("raw", "bytes", ""),
        3: ("contentEncoding", "str", ""),
        4: ("contentType", "str", ""),
    },
    "ObjectMeta": {
        1: ("name", "str", ""),
        2: ("generateName", "str", ""),
        3: ("namespace", "str", ""),
        5: ("uid", "str", ""),
        6: ("resourceVersion", "str", ""),
        7: ("generation", "int", ""),
        11: ("labels", "map", ""),
        12: ("annotations", "map", ""),
        13: ("ownerReferences", "rmsg", "OwnerReference"),
        14: ("finalizers", "rstr", ""),
    },
    "OwnerReference": {
        1: ("kind", "str", ""),
        3: ("name", "str", ""),
        4: ("uid", "str", ""),
        5: ("apiVersion", "str", ""),
        6: ("controller", "bool", ""),
        7: ("blockOwnerDeletion", "bool", ""),
    },
    "LabelSelector": {
        1: ("matchLabels", "map", ""),
        2: ("matchExpressions", "rmsg", "LabelSelectorRequirement"),
    },
    "LabelSelectorRequirement": {
        1: ("key", "str", ""),
        2: ("operator", "str", ""),
        3: ("values", "rstr", ""),
    },
    "Namespace": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "rstr", "")},
    "ConfigMap": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("data", "map", ""),
        3: ("binaryData", "bmap", ""),
        4: ("immutable", "bool", ""),
    },
    "Secret": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("data", "bmap", ""),
        3: ("type", "str", ""),
        4: ("stringData", "map", ""),
        5: ("immutable", "bool", ""),
    },
    "ServiceAccount": {1: ("metadata", "msg", "ObjectMeta"), 4: ("automountServiceAccountToken", "bool", "")},
    "ResourceQuota": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "ResourceQuotaSpec")},
    "ResourceQuotaSpec": {1: ("hard", "qmap", ""), 2: ("scopes", "rstr", "")},
    "Quantity": {1: ("string", "str", "")},
    "Deployment": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "DeploymentSpec")},
    "DeploymentSpec": {
        1: ("replicas", "int", ""),
        2: ("selector", "msg", "LabelSelector"),
        3: ("template", "msg", "PodTemplateSpec"),
        4: ("strategy", "msg", "DeploymentStrategy"),
        5: ("minReadySeconds", "int", ""),
        6: ("revisionHistoryLimit", "int", ""),
        7: ("paused", "bool", ""),
        9: ("progressDeadlineSeconds", "int", ""),
    },
    "DeploymentStrategy": {1: ("type", "str", "")},
    "Job": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "JobSpec")},
    "JobSpec": {
        1: ("parallelism", "int", ""),
        2: ("completions", "int", ""),
        3: ("activeDeadlineSeconds", "int", ""),
        6: ("template", "msg", "PodTemplateSpec"),
        7: ("backoffLimit", "int", ""),
    },
    "PodTemplateSpec": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "PodSpec")},
    "Pod": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "PodSpec")},
    "PodSpec": {
        2: ("containers", "rmsg", "Container"),
        3: ("restartPolicy", "str", ""),
        4: ("terminationGracePeriodSeconds", "int", ""),
        6: ("dnsPolicy", "str", ""),
        7: ("nodeSelector", "map", ""),
        8: ("serviceAccountName", "str", ""),
        10: ("nodeName", "str", ""),
        19: ("schedulerName", "str", ""),
        20: ("initContainers", "rmsg", "Container"),
        24: ("priorityClassName", "str", ""),
    },
    "Container": {
        1: ("name", "str", ""),
        2: ("image", "str", ""),
        3: ("command", "rstr", ""),
        4: ("args", "rstr", ""),
        5: ("workingDir", "str", ""),
        6: ("ports", "rmsg", "ContainerPort"),
        7: ("env", "rmsg", "EnvVar"),
        8: ("resources", "msg", "ResourceRequirements"),
        13: ("terminationMessagePath", "str", ""),
        14: ("imagePullPolicy", "str", ""),
        16: ("stdin", "bool", ""),
        17: ("stdinOnce", "bool", ""),
        18: ("tty", "bool", ""),
        20: ("terminationMessagePolicy", "str", ""),
    },
    "ContainerPort": {
        1: ("name", "str", ""),
        2: ("hostPort", "int", ""),
        3: ("containerPort", "int", ""),
        4: ("protocol", "str", ""),
        5: ("hostIP", "str", ""),
    },
    "EnvVar": {1: ("name", "str", ""), 2: ("value", "str", "")},
    "ResourceRequirements": {1: ("limits", "qmap", ""), 2: ("requests", "qmap", "")},
    "Service": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "ServiceSpec")},
    "ServiceSpec": {
        1: ("ports", "rmsg", "ServicePort"),
        2: ("selector", "map", ""),
        3: ("clusterIP", "str", ""),
        4: ("type", "str", ""),
        5: ("externalIPs", "rstr", ""),
        7: ("sessionAffinity", "str", ""),
        8: ("loadBalancerIP", "str", ""),
        10: ("externalName", "str", ""),
    },
    "ServicePort": {
        1: ("name", "str", ""),
        2: ("protocol", "str", ""),
        3: ("port", "int", ""),
        4: ("targetPort", "ios", ""),
        5: ("nodePort", "int", ""),
        6: ("appProtocol", "str", ""),
    },
    "IntOrString": {1: ("type", "int", ""), 2: ("intVal", "int", ""), 3: ("strVal", "str", "")},
    "HorizontalPodAutoscaler": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "HPASpecV1")},
    "HPASpecV1": {
        1: ("scaleTargetRef", "msg", "CrossVersionObjectReference"),
        2: ("minReplicas", "int", ""),
        3: ("maxReplicas", "int", ""),
        4: ("targetCPUUtilizationPercentage", "int", ""),
    },
    "CrossVersionObjectReference": {
        1: ("kind", "str", ""),
        2: ("name", "str", ""),
        3: ("apiVersion", "str", ""),
    },
    "Eviction": {1: ("metadata", "msg", "ObjectMeta"), 2: ("deleteOptions", "msg", "DeleteOptions")},
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int", ""),
        3: ("orphanDependents", "bool", ""),
        4: ("propagationPolicy", "str", ""),
        5: ("dryRun", "rstr", ""),
    },
}


def _bad(msg: str) -> ApiError:
    return ApiError(400, "BadRequest", f"couldn't decode the protobuf body: {msg}")


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf):
            raise _bad("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 70:
            raise _bad("varint too long")


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(buf):
        val: Any
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise _bad("truncated field")
            val, i = buf[i : i + n], i + n
        elif wt == 1:
            val, i = buf[i : i + 8], i + 8
        elif wt == 5:
            val, i = buf[i : i + 4], i + 4
        else:
            raise _bad(f"unsupported wire type {wt}")
        out.append((num, wt, val))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _str(v: Any) -> str:
    if not isinstance(v, bytes | bytearray):
        raise _bad("expected a length-delimited string")
    return bytes(v).decode("utf-8", "replace")


def _entry(v: Any) -> tuple[str, bytes]:
    key, val = "", b""
    for num, _, x in _fields(bytes(v)):
        if num == 1:
            key = _str(x)
        elif num == 2:
            val = bytes(x)
    return key, val


def decode_message(buf: bytes, schema: str) -> dict[str, Any]:
    spec = SCHEMAS[schema]
    out: dict[str, Any] = {}
    for num, wt, val in _fields(buf):
        f = spec.get(num)
        if f is None:
            continue
        name, kind, sub = f
        if kind == "str":
            out[name] = _str(val)
        elif kind == "bytes":
            out[name] = bytes(val)
        elif kind == "int":
            if wt != 0:
                raise _bad(f"field {name}: expected an integer")
            out[name] = _signed(val)
        elif kind == "bool":
            out[name] = bool(val)
        elif kind == "msg":
            out[name] = decode_message(bytes(val), sub)
        elif kind == "rmsg":
            out.setdefault(name, []).append(decode_message(bytes(val), sub))
        elif kind == "rstr":
            out.setdefault(name, []).append(_str(val))
        elif kind == "map":
            k, v = _entry(val)
            out.setdefault(name, {})[k] = v.decode("utf-8", "replace")
        elif kind == "bmap":
            import base64

            k, v = _entry(val)
            out.setdefault(name, {})[k] = base64.b64encode(v).decode()
        elif kind == "qmap":
            k, v = _entry(val)
            out.setdefault(name, {})[k] = decode_message(v, "Quantity").get("string", "0")
        elif kind == "ios":
            ios = decode_message(bytes(val), "IntOrString")
            out[name] = ios.get("strVal", "") if ios.get("type") == 1 else ios.get("intVal", 0)
    return out


# optional (pointer) fields whose zero value is meaningful; every other zero value is Go's omitempty default
_POINTER_FIELDS = {
    "replicas",
    "terminationGracePeriodSeconds",
    "backoffLimit",
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "revisionHistoryLimit",
    "progressDeadlineSeconds",
    "automountServiceAccountToken",
    "immutable",
    "gracePeriodSeconds",
    "orphanDependents",
    "minReplicas",
    "targetCPUUtilizationPercentage",
}


def _prune(v: Any) -> Any:
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            x = _prune(x)
            if k not in _POINTER_FIELDS and (x == "" or x is False or (x == 0 and type(x) is int)):
                continue
            out[k] = x
        return out
    if isinstance(v, list):
        return [_prune(x) for x in v]
    return v


def decode_body(body: bytes) -> dict[str, Any]:
    """A protobuf request body → the JSON-shaped object (400 if malformed, 415 for kinds we cannot read)."""
    if not body.startswith(MAGIC):
        raise _bad("missing the k8s protobuf prefix")
    env = decode_message(body[len(MAGIC) :], "Unknown")
    tm = env.get("typeMeta") or {}
    kind, api_version = tm.get("kind", ""), tm.get("apiVersion", "")
    readable = kind in SCHEMAS and kind not in ("TypeMeta", "Unknown")
    if kind == "HorizontalPodAutoscaler" and api_version != "autoscaling/v1":
        readable = False
    if not readable:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the itbench twin cannot read {kind or 'this object'} in protobuf; send it as JSON or YAML "
            "(for example `kubectl create -f file.yaml` or `kubectl apply -f`)",
        )
    obj = _prune(decode_message(env.get("raw", b""), kind))
    return {"apiVersion": api_version, "kind": kind, **obj}
