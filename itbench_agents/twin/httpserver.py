"""A small threaded HTTP/1.1 server shared by the twin's endpoints (Kubernetes, Prometheus, Loki, Jaeger).

An endpoint is a plain function ``handler(Request) -> Response``. Responses with an iterator body
are streamed with chunked transfer encoding (watches); an iterator may yield ``b""`` while it waits,
which lets the server notice a client that has gone away and stop (``close()``) the stream at once
instead of at its next event. Request bodies may be sent with ``Content-Length`` or chunked
(``Transfer-Encoding: chunked``, as Go clients stream stdin); bodies above ``MAX_BODY_BYTES`` get a
413. A connection idle for ``idle_timeout`` seconds between requests is closed. Any exception
escaping a handler becomes a 500 with a JSON body — handlers are expected to turn bad input into
4xx themselves; the property tests check that they do.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024 * 1024
"""The most any endpoint reads of a request body (endpoints apply their own, smaller limits)."""
IDLE_TIMEOUT_S = 90.0
"""How long a keep-alive connection may sit idle (or a request take to arrive) before it is closed."""


class _BodyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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

    def setup(self) -> None:
        super().setup()
        # the idle timeout: reading a request (line, headers, body) that does not come closes the connection
        self.connection.settimeout(self.server.idle_timeout)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError as e:
            raise _BodyError(400, "invalid Content-Length") from e
        if length > MAX_BODY_BYTES:
            raise _BodyError(413, f"Request entity too large: limit is {MAX_BODY_BYTES}")
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        """A ``Transfer-Encoding: chunked`` body (RFC 9112 §7.1), trailers skipped."""
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1026)
            size_s = line.split(b";", 1)[0].strip()
            try:
                size = int(size_s, 16)
            except ValueError as e:
                raise _BodyError(400, "malformed chunked request body") from e
            if size < 0:
                raise _BodyError(400, "malformed chunked request body")
            if size == 0:
                break
            total += size
            if total > MAX_BODY_BYTES:
                raise _BodyError(413, f"Request entity too large: limit is {MAX_BODY_BYTES}")
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.read(2) != b"\r\n":
                raise _BodyError(400, "malformed chunked request body")
            parts.append(chunk)
        for _ in range(100):  # trailer fields up to the empty line
            line = self.rfile.readline(8192)
            if line in (b"\r\n", b"\n", b""):
                break
        return b"".join(parts)

    def _peer_closed(self) -> bool:
        """Whether the client has closed its end (a readable socket with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _handle(self) -> None:
        try:
            body = self._read_body()
        except _BodyError as e:
            self.close_connection = True
            self._send(
                Response.json(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Failure",
                        "message": str(e),
                        "reason": "RequestEntityTooLarge" if e.status == 413 else "BadRequest",
                        "code": e.status,
                    },
                    e.status,
                )
            )
            return
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
                if not chunk:  # the stream is waiting: is anyone still listening?
                    if self._peer_closed():
                        self.close_connection = True
                        return
                    continue
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        finally:
            close = getattr(body, "close", None)
            if close:
                close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, addr: tuple[str, int], app: Handler, idle_timeout: float | None = IDLE_TIMEOUT_S
    ) -> None:
        self.app = app
        self.idle_timeout = idle_timeout
        super().__init__(addr, _ReqHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that goes away — a reset, a broken pipe, a TLS handshake it abandons or
        refuses (a client without the twin's CA) — is routine for a server: a debug line, not a
        traceback on the terminal of ``itbench twin serve``. Anything else is printed as before."""
        import ssl
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, ssl.SSLError)):
            log.debug("client %s went away: %s", client_address, exc)
            return
        super().handle_error(request, client_address)


class HttpEndpoint:
    """One listening socket serving a handler on a background thread."""

    def __init__(
        self,
        app: Handler,
        host: str = "127.0.0.1",
        port: int = 0,
        idle_timeout: float | None = IDLE_TIMEOUT_S,
    ) -> None:
        self._server = _Server((host, port), app, idle_timeout)
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
        """Stop serving and close the socket. The serving loop notices a shutdown request only at
        its next poll (up to 0.1 s later): connections to it wake it at once, until it has stopped
        (each is accepted and closed unread, as a client that went away)."""
        if not self._thread.is_alive():  # never started, or already stopped: nothing to wait for
            self._server.server_close()
            return
        stopped = threading.Event()

        def shutdown() -> None:
            self._server.shutdown()
            stopped.set()

        threading.Thread(target=shutdown, name="http-stop", daemon=True).start()
        host = str(self._server.server_address[0])
        wake = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        while not stopped.wait(0.002):
            try:
                socket.create_connection((wake, self.port), timeout=0.05).close()
            except OSError:
                stopped.wait(0.02)  # cannot connect (a backlog full?): the poll ends it anyway
        self._server.server_close()
