"""The host twin's endpoint: what ``ssh`` is to a real host, for Ansible's ``itbench_host`` connection.

``POST /v1/exec`` with ``Authorization: Bearer <token>`` and a JSON body ``{"command": "...",
"stdin": "<base64>", "timeout_s": 60}`` runs ``/bin/sh -c command`` inside the host
(:meth:`HostTwin.exec`) and answers ``{"rc", "stdout", "stderr" (base64), "timed_out"}``. Files go
in and out through commands run inside the host (``cat > path``, ``cat path``), so the endpoint has
no file route an agent could point outside the host. One command runs at a time per host, as
commands of one Ansible host do. ``GET /health`` → ``{"hostname": ...}``.

Bad requests get 400 with a reason, a missing or wrong token 401, an unknown route 404.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import threading
from typing import Any

from ..httpserver import Handler, Request, Response
from .host import HostTwin, HostUnavailable

MAX_TIMEOUT_S = 600.0
MAX_STDIN_BYTES = 32 * 1024 * 1024


def _error(status: int, message: str) -> Response:
    return Response.json({"error": message}, status)


def make_host_handler(host: HostTwin, token: str) -> Handler:
    lock = threading.Lock()

    def handle(req: Request) -> Response:
        if req.method == "GET" and req.path == "/health":
            return Response.json({"hostname": host.hostname})
        if req.path != "/v1/exec":
            return _error(404, f"no route {req.method} {req.path}")
        if req.method != "POST":
            return _error(405, "use POST")
        given = req.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return _error(401, "a bearer token from the scenario's inventory is required")
        try:
            body: Any = json.loads(req.body or b"null")
        except (ValueError, UnicodeDecodeError) as e:
            return _error(400, f"the body is not JSON: {e}")
        if not isinstance(body, dict) or not isinstance(body.get("command"), str):
            return _error(400, 'the body must be an object with a string "command"')
        try:
            stdin = base64.b64decode(body.get("stdin") or "", validate=True)
        except (binascii.Error, TypeError, ValueError):
            return _error(400, '"stdin" must be base64')
        if len(stdin) > MAX_STDIN_BYTES:
            return _error(400, f'"stdin" is over {MAX_STDIN_BYTES} bytes')
        timeout = body.get("timeout_s", 60)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not 0 < timeout <= MAX_TIMEOUT_S
        ):
            return _error(400, f'"timeout_s" must be a number in (0, {MAX_TIMEOUT_S:g}]')
        if "\0" in body["command"]:
            return _error(400, "the command holds a NUL byte")
        try:
            with lock:
                result = host.exec(body["command"], stdin=stdin, timeout=float(timeout))
        except HostUnavailable as e:
            return _error(503, str(e))
        return Response.json(
            {
                "rc": result.rc,
                "stdout": base64.b64encode(result.stdout).decode(),
                "stderr": base64.b64encode(result.stderr).decode(),
                "timed_out": result.timed_out,
            }
        )

    return handle
