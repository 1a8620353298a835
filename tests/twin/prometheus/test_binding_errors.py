"""promql-parser's failures become Prometheus errors; a signal that arrives during a call does not.

The binding raises ``ValueError`` (or pyo3's ``PanicException``, a BaseException); the harness's
SIGTERM handler raises its own BaseException wherever the main thread is. Turned into a
``bad_data`` error, a signal during rule evaluation became an episode's ``env_error`` and the batch
ran on (a CI failure of ``test_interrupt``)."""

from __future__ import annotations

from collections.abc import Callable

import promql_parser as pp
import pytest

from itbench_agents.twin.prometheus.alerts import parse_duration_s
from itbench_agents.twin.prometheus.api_params import ApiError, parse_duration_param
from itbench_agents.twin.prometheus.syntax import parse
from itbench_agents.twin.prometheus.values import PromQLError


class Stopping(BaseException):
    """Like the harness's ``Interrupted``: neither KeyboardInterrupt nor SystemExit."""


PanicException = type("PanicException", (BaseException,), {})

CALLS: list[tuple[str, Callable[[], object], type[BaseException]]] = [
    ("parse", lambda: parse("up"), PromQLError),
    ("parse_duration", lambda: parse_duration_s("5m"), ValueError),
    ("parse_duration", lambda: parse_duration_param("5m", "step"), ApiError),
]


def _raising(exc: BaseException) -> Callable[..., object]:
    def call(*args: object) -> object:
        raise exc

    return call


@pytest.mark.parametrize(("name", "call", "_"), CALLS)
def test_a_signal_during_a_binding_call_propagates(
    monkeypatch: pytest.MonkeyPatch, name: str, call: Callable[[], object], _: type[BaseException]
) -> None:
    monkeypatch.setattr(pp, name, _raising(Stopping()))
    with pytest.raises(Stopping):
        call()


@pytest.mark.parametrize(("name", "call", "error"), CALLS)
@pytest.mark.parametrize("failure", [ValueError("bad"), PanicException("boom")])
def test_the_bindings_own_failures_are_errors(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    call: Callable[[], object],
    error: type[BaseException],
    failure: BaseException,
) -> None:
    monkeypatch.setattr(pp, name, _raising(failure))
    with pytest.raises(error):
        call()
