"""Apply scenario operations (faults or mitigation) through the Kubernetes API."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Sequence

from ..k8s.client import KubeApi, KubeApiError
from .spec import CreateOp, DeleteOp, FlagOp, Operation, PatchOp, RestartOp


class InjectionError(RuntimeError):
    """An operation failed; the message names the operation and the API's answer."""


def _flag(api: KubeApi, op: FlagOp) -> None:
    cm = api.get("v1", "ConfigMap", op.namespace, op.configmap)
    data = dict(cm.get("data") or {})
    if op.key not in data:
        raise InjectionError(f"{op.describe()}: ConfigMap has no key {op.key!r}")
    try:
        doc = json.loads(data[op.key])
    except json.JSONDecodeError as e:
        raise InjectionError(f"{op.describe()}: key {op.key!r} is not JSON: {e}") from e
    flags = doc.get("flags") or {}
    if op.name not in flags:
        raise InjectionError(f"{op.describe()}: no flag {op.name!r} (have {', '.join(sorted(flags))})")
    variants = flags[op.name].get("variants") or {}
    if variants and op.variant not in variants:
        raise InjectionError(
            f"{op.describe()}: flag has no variant {op.variant!r} (have {', '.join(variants)})"
        )
    flags[op.name]["defaultVariant"] = op.variant
    data[op.key] = json.dumps(doc, indent=2)
    cm["data"] = data
    api.replace(cm)


def _restart(api: KubeApi, op: RestartOp, now: Callable[[], _dt.datetime]) -> None:
    stamp = now().strftime("%Y-%m-%dT%H:%M:%SZ")
    patch = {
        "spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}}}
    }
    api.patch("apps/v1", op.kind, op.namespace, op.name, patch, "strategic")


def apply_operation(api: KubeApi, op: Operation, now: Callable[[], _dt.datetime] | None = None) -> None:
    now = now or (lambda: _dt.datetime.now(_dt.UTC))
    try:
        if isinstance(op, CreateOp):
            api.create(op.object)
        elif isinstance(op, PatchOp):
            t = op.target
            api.patch(t.apiVersion, t.kind, t.namespace, t.name, op.patch, op.type)
        elif isinstance(op, DeleteOp):
            t = op.target
            try:
                api.delete(t.apiVersion, t.kind, t.namespace, t.name)
            except KubeApiError as e:
                if not (op.missing_ok and e.code == 404):
                    raise
        elif isinstance(op, FlagOp):
            _flag(api, op)
        elif isinstance(op, RestartOp):
            _restart(api, op, now)
        else:  # pragma: no cover - the union is closed
            raise InjectionError(f"unknown operation {op!r}")
    except KubeApiError as e:
        raise InjectionError(f"{op.describe()}: {e}") from e


def apply_operations(
    api: KubeApi, ops: Sequence[Operation], now: Callable[[], _dt.datetime] | None = None
) -> list[str]:
    """Apply ``ops`` in order; returns their descriptions (for the trajectory)."""
    done = []
    for op in ops:
        apply_operation(api, op, now)
        done.append(op.describe())
    return done
