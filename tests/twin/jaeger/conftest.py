"""Jaeger API fixtures: fixed traces served over real HTTP by the twin's Jaeger handler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jaeger_fixtures import FixtureHost, build_traces

from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.jaeger.memory import InMemoryTraceSource
from itbench_agents.twin.jaeger.server import make_jaeger_handler


def _serve(host: FixtureHost) -> Iterator[str]:
    ep = HttpEndpoint(make_jaeger_handler(host)).start()
    try:
        yield ep.url
    finally:
        ep.stop()


@pytest.fixture(scope="module")
def source() -> InMemoryTraceSource:
    return InMemoryTraceSource(build_traces())


@pytest.fixture(scope="module")
def jaeger(source: InMemoryTraceSource) -> Iterator[str]:
    yield from _serve(FixtureHost(source))


@pytest.fixture(scope="module")
def masked_jaeger(source: InMemoryTraceSource) -> Iterator[str]:
    yield from _serve(FixtureHost(source, masked={"traces"}))


@pytest.fixture(scope="module")
def bare_jaeger() -> Iterator[str]:
    yield from _serve(FixtureHost(None))
