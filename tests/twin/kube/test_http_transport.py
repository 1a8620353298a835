"""HTTP/1.1 transport of the twin's endpoints (issue 11): chunked request bodies, idle connections,
and watches released as soon as their client goes away."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from kube_helpers import Cluster, needs_kubectl

from itbench_agents.twin.httpserver import HttpEndpoint, Request, Response


def _raw(port: int, data: bytes, timeout: float = 5) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                part = s.recv(65536)
            except TimeoutError:
                break
            if not part:
                break
            out += part
            if b"\r\n\r\n" in out and b'"kind"' in out and out.rstrip().endswith(b"}"):
                break
    return out


def _port(cluster: Cluster) -> int:
    return int(cluster.url.rsplit(":", 1)[1])


def test_chunked_request_body(cluster: Cluster) -> None:
    body = json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "chunky"}, "data": {"a": "b"}}
    )
    raw = body.encode()
    chunks = b"".join(
        f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n" for p in (raw[:10], raw[10:37], raw[37:])
    )
    req = (
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunks + b"0\r\nX-Trailer: y\r\n\r\n"
    )
    out = _raw(_port(cluster), req)
    assert out.startswith(b"HTTP/1.1 201"), out[:200]
    assert cluster.http("GET", "/api/v1/namespaces/default/configmaps/chunky").json()["data"] == {"a": "b"}
    bad = (
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\nnope\r\n0\r\n\r\n"
    )
    assert _raw(_port(cluster), bad).startswith(b"HTTP/1.1 400")


@needs_kubectl
@pytest.mark.kubectl
def test_kubectl_create_raw_from_stdin(cluster: Cluster) -> None:
    body = json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "raw"}, "data": {"k": "v"}}
    )
    out = cluster.kubectl(
        "create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", "-", input=body
    ).stdout
    assert json.loads(out)["metadata"]["name"] == "raw"
    assert cluster.kjson("get", "cm", "raw")["data"] == {"k": "v"}


def test_idle_connections_are_closed() -> None:
    ep = HttpEndpoint(lambda req: Response.text("ok"), idle_timeout=0.5).start()
    try:
        with socket.create_connection(("127.0.0.1", ep.port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            reply = b""
            while not reply.endswith(b"\r\n\r\nok"):  # headers and body may come apart
                chunk = s.recv(4096)
                assert chunk, reply
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 200")
            t0 = time.monotonic()
            assert s.recv(4096) == b""  # the server hung up on the idle keep-alive connection
            assert time.monotonic() - t0 < 3
        with socket.create_connection(("127.0.0.1", ep.port), timeout=5) as s:
            s.sendall(b"GET / HT")  # a request that never completes
            assert s.recv(4096) == b""
    finally:
        ep.stop()


def test_stream_released_when_client_disconnects() -> None:
    closed = threading.Event()

    def app(req: Request) -> Response:
        def stream() -> Iterator[bytes]:
            try:
                yield b"first\n"
                while True:  # a watch with nothing to report
                    time.sleep(0.05)
                    yield b""
            finally:
                closed.set()

        return Response(200, stream())

    ep = HttpEndpoint(app).start()
    try:
        s = socket.create_connection(("127.0.0.1", ep.port), timeout=5)
        s.sendall(b"GET /w HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        while b"first" not in got:
            got += s.recv(4096)
        s.close()
        assert closed.wait(3), "the stream was not closed after the client went away"
    finally:
        ep.stop()


def test_watch_thread_ends_on_disconnect(cluster: Cluster) -> None:
    # threads are told apart by identity: other tests' handler threads may end meanwhile
    def handler_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name.startswith("Thread-") and t.is_alive()}

    before = handler_threads()
    socks = []
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", _port(cluster)), timeout=5)
        s.sendall(b"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        socks.append(s)
    watchers = handler_threads() - before
    assert len(watchers) >= 5, "each watch is served by a thread of its own"
    for s in socks:
        s.close()
    deadline = time.monotonic() + 5
    while any(t.is_alive() for t in watchers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(t.is_alive() for t in watchers), "watch threads outlived their clients"
