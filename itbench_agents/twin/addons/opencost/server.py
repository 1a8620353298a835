"""OpenCost's HTTP API (the cost-model's port 9003) over a :class:`CostModel`.

Routes and parameters (https://opencost.io/docs/integrations/api; handler
``pkg/costmodel/router.go::ComputeAllocationHandler``):

- ``GET /allocation`` and ``GET /allocation/compute``: ``window`` (required), ``aggregate``
  (comma-separated: cluster, node, namespace, controllerKind, controller, service, pod, container,
  deployment, statefulset, daemonset, job, ``label:<name>``, ``annotation:<name>``), ``step``
  (default: the window), ``accumulate`` (``true``/``all``, ``false``/``none``, ``hour``, ``day``,
  ``week``, ``month``) or ``accumulateBy``, ``includeIdle`` (alias ``idle``), ``shareIdle``,
  ``filter`` (``filters.py``). ``resolution`` and ``idleByNode`` are accepted and change nothing:
  the twin integrates exactly, and idle is cluster-wide. → ``{"code": 200, "status": "success",
  "data": [ {name: allocation}, ... one set per step ]}``.
- ``GET /assets``: ``window``, ``filter`` (``assetType:"node"``...) → ``{"code": 200, "status":
  "success", "data": {key: asset}}``.
- ``GET /healthz`` → 200.

Errors as OpenCost gives them: a bad ``window`` or ``aggregate`` is ``400`` with a plain-text body
(``Invalid 'window' parameter: illegal window: 7x``, from ``http.Error``); a bad ``step``,
``accumulate`` or ``filter`` is ``400 {"code": 400, "status": "error", "message": ...}``. A query
may not make more than ``MAX_SETS`` sets (a 1-minute step over a month would otherwise run for
minutes).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import orjson

from ...httpserver import Request, Response
from .allocation import accumulate, aggregate, compute_sets, parse_aggregate, set_json
from .assets import asset_set
from .costmodel import CostModel
from .filters import FilterError, parse_filter
from .window import DAY, Window, WindowError, parse_duration, parse_window

MAX_SETS = 10_000
_ACCUMULATE = {
    "": "none",
    "false": "none",
    "none": "none",
    "0": "none",
    "f": "none",
    "true": "all",
    "all": "all",
    "1": "all",
    "t": "all",
    "hour": "hour",
    "day": "day",
    "week": "week",
    "month": "month",
}


class BadRequest(Exception):
    def __init__(self, message: str, plain: bool = False) -> None:
        super().__init__(message)
        self.plain = plain


def _bool(req: Request, *names: str, default: bool = False) -> bool:
    for n in names:
        v = req.arg(n)
        if v is None:
            continue
        v = v.strip().lower()
        if v in ("1", "t", "true"):
            return True
        if v in ("0", "f", "false"):
            return False
    return default


def _envelope(data: Any) -> Response:
    """OpenCost's success envelope. A week of hourly sets per container is megabytes of JSON:
    ``orjson`` writes it five times faster than the standard library (same JSON, parsed)."""
    body = orjson.dumps(
        {"code": 200, "status": "success", "data": data},
        option=orjson.OPT_SERIALIZE_NUMPY,
        default=_plain,
    )
    return Response(200, body, {"Content-Type": "application/json"})


def _plain(obj: Any) -> Any:
    """numpy scalars as Python numbers (what ``json.dumps`` makes of a float64)."""
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def _period_key(t: float, how: str) -> int:
    if how == "hour":
        return int(t // 3600)
    if how == "day":
        return int(t // DAY)
    if how == "week":
        d = int(t // DAY)
        return d - (d + 4) % 7  # the Sunday that starts the week
    tm = time.gmtime(t)
    return tm.tm_year * 12 + tm.tm_mon


class OpenCostApi:
    """The handler: ``OpenCostApi(model)(request) -> response``."""

    def __init__(self, model: CostModel) -> None:
        self.model = model

    def __call__(self, req: Request) -> Response:
        path = req.path.rstrip("/") or "/"
        if req.method not in ("GET", "HEAD"):
            return Response.text("405 method not allowed\n", 405)
        try:
            if path in ("/healthz", "/health"):
                return Response.text("OK\n")
            if path in ("/allocation", "/allocation/compute"):
                return _envelope(self.allocation(req))
            if path == "/assets":
                return _envelope(self.assets(req))
        except BadRequest as e:
            if e.plain:
                return Response.text(f"{e}\n", 400)
            return Response.json({"code": 400, "status": "error", "message": str(e)}, 400)
        return Response.text("404 page not found\n", 404)

    # ------------------------------------------------------------------ parameters
    def _window(self, req: Request) -> Window:
        try:
            w = parse_window(req.arg("window", "") or "", self.model.now())
        except WindowError as e:
            raise BadRequest(f"Invalid 'window' parameter: {e}", plain=True) from None
        if not w.end > w.start:
            raise BadRequest(f"Invalid 'window' parameter: window {req.arg('window')} is empty", plain=True)
        return w

    def allocation(self, req: Request) -> list[dict[str, Any]]:
        w = self._window(req)
        try:
            props = parse_aggregate(req.arg("aggregate"))
        except ValueError as e:
            raise BadRequest(f"Invalid 'aggregate' parameter: {e}", plain=True) from None
        acc_raw = (req.arg("accumulateBy") or req.arg("accumulate") or "").strip().lower()
        how = _ACCUMULATE.get(acc_raw)
        if how is None:
            raise BadRequest(f"Invalid 'accumulateBy' parameter: unknown accumulate option {acc_raw!r}")
        step_raw = req.arg("step")
        if step_raw:
            try:
                step = parse_duration(step_raw)
            except WindowError as e:
                raise BadRequest(f"Invalid step parameter: {e}") from None
        else:
            step = {"hour": 3600.0, "day": DAY, "week": DAY, "month": DAY}.get(how, w.seconds)
        count = math.ceil(w.seconds / step - 1e-9)
        if count > MAX_SETS:
            raise BadRequest(
                f"Invalid step parameter: a window of {w.seconds:.0f}s in steps of {step:.0f}s makes {count} sets; "
                f"at most {MAX_SETS} are allowed"
            )
        try:
            keep = parse_filter(req.arg("filter", "") or "")
        except FilterError as e:
            raise BadRequest(f"Invalid 'filter' parameter: {e}") from None
        edges = np.minimum(w.start + step * np.arange(count + 1), w.end)
        sets = compute_sets(
            self.model,
            edges,
            keep=keep,
            include_idle=_bool(req, "includeIdle", "idle"),
            share_idle=_bool(req, "shareIdle"),
        )
        sets = [aggregate(s, props) for s in sets]
        if how == "all":
            sets = [accumulate(sets)] if sets else []
        elif how != "none":
            groups: dict[int, list[Any]] = {}
            for s in sets:
                groups.setdefault(_period_key(s.window[0], how), []).append(s)
            sets = [accumulate(g) for _, g in sorted(groups.items())]
        return [set_json(s) for s in sets]

    def assets(self, req: Request) -> dict[str, Any]:
        w = self._window(req)
        try:
            return asset_set(self.model, (w.start, w.end), req.arg("filter", "") or "")
        except FilterError as e:
            raise BadRequest(f"Invalid 'filter' parameter: {e}") from None


def make_opencost_handler(model: CostModel) -> OpenCostApi:
    return OpenCostApi(model)
