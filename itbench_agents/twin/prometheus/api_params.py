"""The Prometheus HTTP API's request parameters, errors and limits (``server.py`` serves them;
``status.py`` uses them too): Prometheus' ``parseTime`` and ``parseDuration``, the JSON envelope,
the ``errorType`` → status code table, the query timeout, concurrency and sample limits."""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

import promql_parser as pp

from ..httpserver import Response
from .syntax import binding_failed
from .values import PromQLError

DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 30.0
MAX_CONCURRENT_QUERIES = 2  # evaluations at once; more wait (a Python engine shares one GIL)
MAX_SAMPLES = 5_000_000  # Prometheus' default is 50M; the twin evaluates in Python (see README)
MIN_TIME_S = -9223372036854775.808 / 1000 * 1000  # Prometheus' minTime, in seconds
MAX_TIME_S = 9223372036854775.807
STATUS = {
    "bad_data": 400,
    "execution": 422,
    "timeout": 503,
    "canceled": 503,
    "internal": 500,
    "not_found": 404,
}


class ApiError(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


def error_response(error_type: str, message: str) -> Response:
    return Response.json(
        {"status": "error", "errorType": error_type, "error": message}, STATUS.get(error_type, 500)
    )


def success(data: Any, warnings: list[str] | None = None, infos: list[str] | None = None) -> Response:
    body: dict[str, Any] = {"status": "success", "data": data}
    if warnings:
        body["warnings"] = warnings
    if infos:
        body["infos"] = infos
    return Response.json(body)


MAX_ABS_TIME_S = 1e13  # ±317,000 years around 1970: beyond, timestamps are refused as unparsable


def parse_time(value: str, param: str) -> float:
    """Prometheus' ``parseTime``: unix seconds (float) or RFC3339."""
    v = value.strip()
    try:
        t = float(v)
        if math.isnan(t) or math.isinf(t) or abs(t) > MAX_ABS_TIME_S:
            raise ValueError
        return t
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
        if dt.tzinfo is not None:
            return dt.timestamp()
    except ValueError:
        pass
    if v in ("-292273086-05-16T16:47:06Z", "292277025-08-18T07:12:54.999999999Z"):
        return MIN_TIME_S if v.startswith("-") else MAX_TIME_S
    raise ApiError("bad_data", f'invalid parameter "{param}": cannot parse "{value}" to a valid timestamp')


def parse_duration_param(value: str, param: str) -> float:
    """Prometheus' ``parseDuration``: float seconds or a duration string."""
    v = value.strip()
    try:
        d = float(v)
        if math.isnan(d) or math.isinf(d):
            raise ValueError
        if d * 1000 > 9.2e18:
            raise ApiError(
                "bad_data",
                f'invalid parameter "{param}": cannot parse "{value}" to a valid duration. It overflows int64',
            )
        return d
    except ValueError:
        pass
    try:
        if not re.fullmatch(r"(\d+(ms|s|m|h|d|w|y))+", v):
            raise ValueError
        return pp.parse_duration(v).total_seconds()
    except BaseException as exc:  # noqa: BLE001 - the Rust binding may raise non-ValueError
        if not binding_failed(exc):
            raise
        raise ApiError(
            "bad_data", f'invalid parameter "{param}": cannot parse "{value}" to a valid duration'
        ) from None


def with_query_prefix(run: Any) -> Any:
    try:
        return run()
    except PromQLError as exc:
        if exc.error_type == "bad_data" and not exc.message.startswith("invalid parameter"):
            raise PromQLError(f'invalid parameter "query": {exc.message}', "bad_data") from None
        raise
