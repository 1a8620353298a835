"""Loki API fixtures: fixed log streams served over real HTTP by the twin's Loki handler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loki_fixtures import FixtureHost, build_streams

from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.loki.memory import InMemoryLogSource
from itbench_agents.twin.loki.server import make_loki_handler


@pytest.fixture(scope="module")
def host() -> FixtureHost:
    return FixtureHost(InMemoryLogSource(build_streams()))


@pytest.fixture(scope="module")
def loki(host: FixtureHost) -> Iterator[str]:
    ep = HttpEndpoint(make_loki_handler(host)).start()
    try:
        yield ep.url
    finally:
        ep.stop()
