"""Kubernetes API errors, rendered as ``meta/v1 Status`` objects in the apiserver's wording."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ApiError(Exception):
    """An error the API server answers with a ``Status`` body."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    causes: list[dict[str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:  # errors passed on from storage carry none (etcd's "request is too large")
            del body["reason"]
        details = dict(self.details or {})
        if self.causes:
            details["causes"] = self.causes
        if details:
            body["details"] = details
        return body


def _resource_label(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_resource_label(group, resource)} "{name}" not found',
        {"name": name, "group": group, "kind": resource} if group else {"name": name, "kind": resource},
    )


def already_exists(group: str, resource: str, name: str) -> ApiError:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(
        409, "AlreadyExists", f'{_resource_label(group, resource)} "{name}" already exists', details
    )


def conflict(group: str, resource: str, name: str) -> ApiError:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_resource_label(group, resource)} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        details,
    )


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> ApiError:
    """422 Invalid. ``causes`` are (field, reason_type, message) such as
    ("spec.replicas", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0")."""
    summary = ", ".join(f"{f}: {m}" for f, _, m in causes)
    label = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    return ApiError(
        422,
        "Invalid",
        f'{label} "{name}" is invalid: {summary}',
        details,
        [{"reason": r, "message": m, "field": f} for f, r, m in causes],
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def route_not_found() -> ApiError:
    """404 for a path the API server does not serve (no such group, version, resource or subresource)."""
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)
