"""A small threaded HTTP/1.1 server shared by the twin's endpoints (Kubernetes, Prometheus, Loki, Jaeger).

An endpoint is a plain function ``handler(Request) -> Response``. Responses with an iterator body
are streamed with chunked transfer encoding (watches). Any exception escaping a handler becomes a
500 with a JSON body — handlers are expected to turn bad input into 4xx themselves; the property
tests check that they do.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger(__name__)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes = b""

    def arg(self, name: str, default: str | None = None) -> str | None:
        vals = self.query.get(name)
        return vals[-1] if vals else default

    def form(self) -> dict[str, list[str]]:
        """Query parameters merged with an ``application/x-www-form-urlencoded`` body (Prometheus POST)."""
        merged = {k: list(v) for k, v in self.query.items()}
        if self.headers.get("content-type", "").startswith("application/x-www-form-urlencoded") and self.body:
            for k, v in parse_qs(self.body.decode("utf-8", "replace"), keep_blank_values=True).items():
                merged.setdefault(k, []).extend(v)
        return merged


@dataclass
class Response:
    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, obj: Any, status: int = 200, content_type: str = "application/json") -> Response:
        return cls(status, json.dumps(obj, separators=(",", ":")).encode(), {"Content-Type": content_type})

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> Response:
        return cls(status, text.encode(), {"Content-Type": content_type})


Handler = Callable[[Request], Response]


class _ReqHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = (
        True  # headers and body go out as separate writes: avoid 40 ms delayed-ACK stalls
    )
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)

    def _handle(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        body = self.rfile.read(length) if length > 0 else b""
        parts = urlsplit(self.path)
        req = Request(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        try:
            resp = self.server.app(req)
        except Exception as exc:  # last line of defence: never kill the server
            log.exception("handler crashed on %s %s", req.method, req.path)
            resp = Response.json(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": f"internal error: {exc}",
                    "reason": "InternalError",
                    "code": 500,
                },
                500,
            )
        self._send(resp)

    def _send(self, resp: Response) -> None:
        self.send_response(resp.status)
        headers = dict(resp.headers)
        headers.setdefault("Content-Type", "application/json")
        if isinstance(resp.body, bytes | bytearray):
            headers["Content-Length"] = str(len(resp.body))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(resp.body)
            return
        headers["Transfer-Encoding"] = "chunked"
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        body: Iterator[bytes] = iter(resp.body)
        try:
            for chunk in body:
                if not chunk:
                    continue
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            close = getattr(body, "close", None)
            if close:
                close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], app: Handler) -> None:
        self.app = app
        super().__init__(addr, _ReqHandler)


class HttpEndpoint:
    """One listening socket serving a handler on a background thread."""

    def __init__(self, app: Handler, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), app)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> HttpEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
