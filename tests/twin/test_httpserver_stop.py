"""``HttpEndpoint.stop`` (``twin/httpserver.py``): the serving loop is woken rather than waited
for; an endpoint stops however it was left, and refuses connections afterwards."""

from __future__ import annotations

import socket
import threading

import pytest
import requests

from itbench_agents.twin.httpserver import HttpEndpoint, Response


def _endpoint() -> HttpEndpoint:
    return HttpEndpoint(lambda req: Response.json({"ok": True}))


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


def test_a_serving_endpoint_stops_and_refuses_connections() -> None:
    ep = _endpoint().start()
    assert requests.get(ep.url, timeout=5).json() == {"ok": True}
    ep.stop()
    assert not ep._thread.is_alive()
    assert _refused(ep.port)
    ep.stop()  # a second stop is harmless


@pytest.mark.parametrize("started", [False, True])
def test_stop_returns_whatever_the_endpoints_state(started: bool) -> None:
    """Never started (the loop cannot answer a shutdown request: waiting for one would hang), or
    stopped already: ``stop`` returns."""
    ep = _endpoint()
    if started:
        ep.start().stop()
    t = threading.Thread(target=ep.stop, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "stop() hung"
    assert _refused(ep.port)
