"""OPA's REST API (https://www.openpolicyagent.org/docs/rest-api) over an :class:`OpaStore`.

Served routes, with OPA's status codes and bodies:

- ``GET /health`` → ``200 {}``;
- Policy API: ``GET /v1/policies`` (``{"result": [{"id", "raw", "ast"}]}``), ``GET|PUT|DELETE
  /v1/policies/{id}`` (ids may hold slashes); a module that does not compile → ``400
  {"code": "invalid_parameter", "message": "error(s) occurred while compiling module(s)", "errors":
  [...]}``; an unknown id → ``404 {"code": "resource_not_found", ...}``;
- Data API: ``GET|POST /v1/data[/{path}]`` (``input`` from the POST body ``{"input": ...}`` or the
  GET ``input`` parameter) → ``{"result": ...}``, or ``{}`` when undefined; ``PUT`` (create or
  replace a base document), ``PATCH`` (JSON Patch) and ``DELETE`` → ``204``;
- Query API: ``GET /v1/query?q=...`` and ``POST /v1/query {"query", "input"}`` → ``{"result":
  [bindings...]}``.

One route is the twin's own, for the agent's ``opa`` command (``opa_command.py``), which evaluates
files the way ``opa eval`` does without touching the server's policies:
``POST /v1/itbench/eval {"modules": {name: text}, "data": {...}, "input": ..., "query": "...",
"v0_compatible": false, "timeout_s": 10}``
→ ``{"result": [...]}`` as ``opa eval --format json`` prints it, or ``400 {"errors": [...]}``; and
``POST /v1/itbench/check {"modules": {...}}`` → ``{"errors": [...]}`` (empty when they compile).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import jsonpatch

from ...httpserver import Handler, Request, Response
from .engine import QueryResult, RegoEngine, RegoError
from .store import NotFound, OpaStore, data_query

MAX_REQUEST_BYTES = 32 * 1024 * 1024
MAX_EVAL_TIMEOUT_S = 60.0
"""The longest time limit the ``opa`` command may ask for (``opa eval --timeout``)."""


def _error(status: int, code: str, message: str, errors: list[dict[str, Any]] | None = None) -> Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if errors:
        body["errors"] = errors
    return Response.json(body, status)


def _rego_error(e: RegoError, compiling: bool) -> Response:
    errors = [p.to_json() for p in e.problems]
    if compiling:
        return _error(400, "invalid_parameter", "error(s) occurred while compiling module(s)", errors)
    if e.compile_time:
        return _error(400, "invalid_parameter", "error(s) occurred while compiling module(s)", errors)
    return _error(500, "internal_error", str(e), errors)


def _json_body(req: Request) -> Any:
    if not req.body.strip():
        return None
    return json.loads(req.body)


def _segments(rest: str) -> list[str]:
    return [unquote(s) for s in rest.split("/") if s]


def _expressions_json(result: QueryResult) -> dict[str, Any]:
    if not result.defined:
        return {}
    rows = []
    for row in result.results:
        out: dict[str, Any] = {
            "expressions": [
                {"value": v, "text": result.query, "location": {"row": 1, "col": 1}}
                for v in row["expressions"]
            ]
        }
        if row.get("bindings"):
            out["bindings"] = row["bindings"]
        rows.append(out)
    return {"result": rows}


class OpaApi:
    """The handler: ``OpaApi(store)(request) -> response``."""

    def __init__(self, store: OpaStore) -> None:
        self.store = store

    def __call__(self, req: Request) -> Response:
        if len(req.body) > MAX_REQUEST_BYTES:
            return _error(413, "invalid_parameter", f"request body exceeds {MAX_REQUEST_BYTES} bytes")
        path = req.path.rstrip("/") or "/"
        try:
            if path == "/health":
                return Response.json({})
            if path == "/v1/policies" or path.startswith("/v1/policies/"):
                return self._policies(req, path[len("/v1/policies") :].lstrip("/"))
            if path == "/v1/data" or path.startswith("/v1/data/"):
                return self._data(req, _segments(path[len("/v1/data") :]))
            if path == "/v1/query":
                return self._query(req)
            if path == "/v1/itbench/eval" and req.method == "POST":
                return self._eval(req)
            if path == "/v1/itbench/check" and req.method == "POST":
                return self._check(req)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return _error(400, "invalid_parameter", f"body contains malformed input document: {e}")
        return Response.text("404 page not found\n", 404)

    # -- policies ---------------------------------------------------------------------------------

    def _policies(self, req: Request, policy_id: str) -> Response:
        policy_id = unquote(policy_id)
        if not policy_id:
            if req.method != "GET":
                return _error(405, "invalid_parameter", f"method {req.method} not allowed")
            return Response.json({"result": [p.to_json() for p in self.store.policies()]})
        try:
            if req.method == "GET":
                return Response.json({"result": self.store.policy(policy_id).to_json()})
            if req.method == "PUT":
                try:
                    raw = req.body.decode("utf-8")
                except UnicodeDecodeError:
                    return _error(400, "invalid_parameter", "policy is not UTF-8 text")
                try:
                    self.store.put_policy(policy_id, raw)
                except RegoError as e:
                    return _rego_error(e, compiling=True)
                return Response.json({})
            if req.method == "DELETE":
                self.store.delete_policy(policy_id)
                return Response.json({})
        except NotFound as e:
            return _error(404, "resource_not_found", e.message)
        return _error(405, "invalid_parameter", f"method {req.method} not allowed")

    # -- data -------------------------------------------------------------------------------------

    def _data(self, req: Request, path: list[str]) -> Response:
        if req.method in ("GET", "POST"):
            has_input, value = False, None
            if req.method == "POST":
                body = _json_body(req)
                if body is not None:
                    if not isinstance(body, dict):
                        return _error(400, "invalid_parameter", "body must be an object with an input field")
                    has_input, value = "input" in body, body.get("input")
            elif req.arg("input") is not None:
                has_input, value = True, json.loads(str(req.arg("input")))
            try:
                result = self.store.query(data_query(path), value, has_input=has_input)
            except RegoError as e:
                return _rego_error(e, compiling=False)
            return Response.json({"result": result.value} if result.defined else {})
        try:
            if req.method == "PUT":
                self.store.write_data(path, _json_body(req))
                return Response(204)
            if req.method == "PATCH":
                patch = _json_body(req)
                if not isinstance(patch, list):
                    return _error(
                        400, "invalid_parameter", "body must be a JSON Patch (a list of operations)"
                    )
                try:
                    current = self.store.read_data(path)
                except NotFound:
                    current = {}
                try:
                    self.store.write_data(path, jsonpatch.apply_patch(current, patch))
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
                    return _error(404, "resource_not_found", f"storage_not_found_error: {e}")
                return Response(204)
            if req.method == "DELETE":
                self.store.delete_data(path)
                return Response(204)
        except NotFound as e:
            return _error(404, "resource_not_found", e.message)
        except ValueError as e:
            return _error(400, "invalid_parameter", str(e))
        return _error(405, "invalid_parameter", f"method {req.method} not allowed")

    # -- ad-hoc queries ---------------------------------------------------------------------------

    def _query(self, req: Request) -> Response:
        if req.method == "GET":
            query, has_input, value = req.arg("q") or "", False, None
        elif req.method == "POST":
            body = _json_body(req) or {}
            if not isinstance(body, dict):
                return _error(400, "invalid_parameter", "body must be an object with a query field")
            query, has_input, value = str(body.get("query") or ""), "input" in body, body.get("input")
        else:
            return _error(405, "invalid_parameter", f"method {req.method} not allowed")
        if not query.strip():
            return _error(400, "invalid_parameter", "missing query")
        try:
            result = self.store.query(query, value, has_input=has_input)
        except RegoError as e:
            return _rego_error(e, compiling=False)
        return Response.json({"result": [row.get("bindings") or {} for row in result.results]})

    def _eval(self, req: Request) -> Response:
        body = _json_body(req)
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return _error(400, "invalid_parameter", "body must be an object with query, modules, data, input")
        modules = body.get("modules") or {}
        data = body.get("data")
        if not isinstance(modules, dict) or not all(isinstance(v, str) for v in modules.values()):
            return _error(400, "invalid_parameter", "modules must map file names to Rego text")
        if data is not None and not isinstance(data, dict):
            return _error(400, "invalid_parameter", "data must be an object")
        engine: RegoEngine = self.store.engine
        v0 = bool(body.get("v0_compatible"))
        timeout = body.get("timeout_s")
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout <= MAX_EVAL_TIMEOUT_S
        ):
            return _error(
                400, "invalid_parameter", f"timeout_s must be a number in (0, {MAX_EVAL_TIMEOUT_S:g}]"
            )
        limit = float(timeout) if timeout is not None else None
        try:
            if "input" in body:
                result = engine.evaluate(
                    modules, body["query"], input=body["input"], data=data, v0_compatible=v0, timeout_s=limit
                )
            else:
                result = engine.evaluate(modules, body["query"], data=data, v0_compatible=v0, timeout_s=limit)
        except RegoError as e:
            return Response.json({"errors": [p.to_json() for p in e.problems], "message": str(e)}, 400)
        return Response.json(_expressions_json(result))

    def _check(self, req: Request) -> Response:
        body = _json_body(req)
        modules = body.get("modules") if isinstance(body, dict) else None
        if not isinstance(modules, dict) or not all(isinstance(v, str) for v in modules.values()):
            return _error(
                400, "invalid_parameter", "body must be an object whose modules map file names to Rego text"
            )
        problems = self.store.engine.check(modules)
        return Response.json({"errors": [p.to_json() for p in problems]})


def make_opa_handler(store: OpaStore) -> Handler:
    return OpaApi(store)
