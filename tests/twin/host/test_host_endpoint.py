"""The host twin's endpoint: token, bad bodies, limits."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from itbench_agents.twin.host.ansible import ServedHost
from itbench_agents.twin.host.host import HostTwin, host_sandbox_problem

pytestmark = pytest.mark.skipif(host_sandbox_problem() is not None, reason=str(host_sandbox_problem()))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    with ServedHost(HostTwin.create(tmp_path_factory.mktemp("host") / "h")) as s:
        yield s


def post(served: ServedHost, body: bytes, token: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    req = urllib.request.Request(served.url + "/v1/exec", data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_exec_runs_inside_the_host(served: ServedHost) -> None:
    body = json.dumps({"command": "cat; hostname", "stdin": base64.b64encode(b"in\n").decode()}).encode()
    status, answer = post(served, body, served.token)
    assert status == 200 and answer["rc"] == 0 and base64.b64decode(answer["stdout"]) == b"in\nrhel9-host\n"


@pytest.mark.parametrize(
    ("body", "token", "status", "says"),
    [
        (b'{"command": "id"}', None, 401, "bearer token"),
        (b'{"command": "id"}', "wrong", 401, "bearer token"),
        (b"{not json", "ok", 400, "not JSON"),
        (b'["id"]', "ok", 400, '"command"'),
        (b'{"command": "id", "stdin": "%%%"}', "ok", 400, "base64"),
        (b'{"command": "id", "timeout_s": 0}', "ok", 400, "timeout_s"),
        (b'{"command": "id", "timeout_s": 1e9}', "ok", 400, "timeout_s"),
        (b'{"command": "id", "timeout_s": true}', "ok", 400, "timeout_s"),
    ],
)
def test_bad_requests_get_reasons(
    served: ServedHost, body: bytes, token: str | None, status: int, says: str
) -> None:
    got, answer = post(served, body, served.token if token == "ok" else token)
    assert got == status and says in answer["error"]


def test_a_long_command_ends_at_its_limit(served: ServedHost) -> None:
    status, answer = post(served, b'{"command": "sleep 20", "timeout_s": 0.3}', served.token)
    assert status == 200 and answer["timed_out"] and answer["rc"] == 124


def test_unknown_routes(served: ServedHost, tmp_path: Path) -> None:
    with urllib.request.urlopen(served.url + "/health", timeout=10) as r:
        assert json.loads(r.read()) == {"hostname": "rhel9-host"}
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(served.url + "/v1/files?path=/etc/shadow", timeout=10)
    assert e.value.code == 404
