"""Small HTTP helpers for the observability tools: JSON GET/POST with errors as ToolError."""

from __future__ import annotations

import json
import re
from typing import Any

import requests

from .spec import ToolError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> float:
    """``"90s"``, ``"15m"``, ``"1h"`` → seconds (a plain number is seconds)."""
    t = text.strip()
    try:
        return float(t)
    except ValueError:
        pass
    m = _DURATION.match(t)
    if not m:
        raise ToolError(f"invalid duration {text!r}; use e.g. 30s, 15m, 1h")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _error_text(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text.strip()[:500] or resp.reason
    if isinstance(body, dict):
        for key in ("error", "message", "errors"):
            if body.get(key):
                v = body[key]
                return v if isinstance(v, str) else json.dumps(v)[:500]
    return json.dumps(body)[:500]


def _request(method: str, url: str, *, shown_url: str, **kwargs: Any) -> requests.Response:
    """Send one request; an unreachable host or a 4xx/5xx answer becomes a ToolError (naming ``shown_url``)."""
    try:
        resp = requests.request(method, url, **kwargs)
    except requests.RequestException as exc:
        raise ToolError(f"cannot reach {url}: {type(exc).__name__}") from None
    if resp.status_code >= 400:
        raise ToolError(f"{resp.status_code} from {shown_url}: {_error_text(resp)}")
    return resp


def get_json(url: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
    resp = _request("GET", url, shown_url=url.split("?")[0], params=params, timeout=timeout)
    try:
        return resp.json()
    except ValueError:
        raise ToolError(f"{url} did not return JSON") from None


def post_json(
    url: str, body: dict[str, Any], timeout: float = 60.0, headers: dict[str, str] | None = None
) -> Any:
    resp = _request("POST", url, shown_url=url, json=body, timeout=timeout, headers=headers or {})
    try:
        return resp.json()
    except ValueError:
        return {}
