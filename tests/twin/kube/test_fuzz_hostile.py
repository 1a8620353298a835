"""Property: hostile input — alias-heavy YAML, broken HTTP framing, absurd lengths — gets a 4xx (or
is accepted) quickly, never a 5xx, and leaves the server serving (issue 11)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kube_helpers import Cluster

from itbench_agents.core.endpoints import kubeconfig_yaml
from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.server import make_kube_handler


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    twin = Twin(seed=5, clock=ManualClock())
    ep = HttpEndpoint(make_kube_handler(twin), idle_timeout=1.0).start()
    kc = Path(tmp_path_factory.mktemp("hostile")) / "kubeconfig"
    kc.write_text(kubeconfig_yaml(ep.url))
    try:
        yield Cluster(twin, ep.url, kc)
    finally:
        ep.stop()


def _port(c: Cluster) -> int:
    return int(c.url.rsplit(":", 1)[1])


@st.composite
def alias_yaml(draw: st.DrawFn) -> str:
    """A ConfigMap-shaped YAML document whose data is built from layers of anchors and aliases."""
    layers = draw(st.integers(1, 9))
    width = draw(st.integers(1, 12))
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: fz}", "data:"]
    lines.append('  l0: &l0 ["' + "x" * draw(st.integers(0, 50)) + '"]')
    for i in range(1, layers):
        refs = ", ".join(f"*l{draw(st.integers(0, i - 1))}" for _ in range(width))
        lines.append(f"  l{i}: &l{i} [{refs}]")
    if draw(st.booleans()):
        lines.append(f"  self: &me [*l0, {{k: *l{layers - 1}}}]")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=alias_yaml(), ctype=st.sampled_from(["application/yaml", "application/apply-patch+yaml"]))
def test_alias_yaml_is_bounded(hostile: Cluster, doc: str, ctype: str) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    method = "POST"
    if ctype == "application/apply-patch+yaml":
        method, path = "PATCH", path + "/fz?fieldManager=fuzz"
    t0 = time.monotonic()
    r = requests.request(
        method, hostile.url + path, data=doc.encode(), headers={"Content-Type": ctype}, timeout=30
    )
    took = time.monotonic() - t0
    assert r.status_code < 500, (doc, r.text[:300])
    assert took < 5, (took, doc)
    assert len(r.content) < 3 * 1024 * 1024
    requests.delete(hostile.url + "/api/v1/namespaces/default/configmaps/fz", timeout=10)
    t0 = time.monotonic()
    assert requests.get(hostile.url + "/api/v1/configmaps", timeout=10).status_code == 200
    assert time.monotonic() - t0 < 2


FRAMING = st.one_of(
    st.binary(max_size=200),
    st.lists(
        st.tuples(
            st.sampled_from(["0", "1", "a", "ff", "-1", "zz", "10000000000", "3;x=y"]), st.binary(max_size=20)
        ),
        max_size=5,
    ).map(lambda cs: b"".join(s.encode() + b"\r\n" + d + b"\r\n" for s, d in cs)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    chunked=st.booleans(),
    length=st.sampled_from([None, "0", "5", "-3", "abc", "99999999999999", "4194304"]),
    body=FRAMING,
)
def test_broken_framing_never_5xx(hostile: Cluster, chunked: bool, length: str | None, body: bytes) -> None:
    head = b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if chunked:
        head += b"Transfer-Encoding: chunked\r\n"
    if length is not None:
        head += f"Content-Length: {length}\r\n".encode()
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", _port(hostile)), timeout=10) as s:
        s.sendall(head + b"\r\n" + body)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            try:
                part = s.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not part:
                break
            out += part
    assert time.monotonic() - t0 < 5
    if out:
        status = out.split(b"\r\n", 1)[0]
        assert status.startswith(b"HTTP/1.1 ") and status[9:10] != b"5", out[:300]
    assert requests.get(hostile.url + "/version", timeout=5).status_code == 200
