"""Stream selectors with POSIX character classes follow RE2 (Go), not Python's ``re``.

Python reads ``[[:digit:]]`` as the class ``[[:digit:]`` followed by a literal ``]``; a source that
pre-filtered with it would drop streams RE2 keeps, so such patterns must stay out of the source.
"""

from __future__ import annotations

from itbench_agents.twin.loki.logql import select_streams
from itbench_agents.twin.loki.memory import InMemoryLogSource
from itbench_agents.twin.telemetry.sources import LogStream, Matcher

S = 1_000_000_000


def _source() -> InMemoryLogSource:
    return InMemoryLogSource(
        [
            LogStream({"app": "cart", "pod": "7-cart"}, [(10 * S, "a")]),
            LogStream({"app": "checkout", "pod": "checkout-1"}, [(10 * S, "b")]),
        ]
    )


def test_posix_class_stream_selector_matches() -> None:
    got = select_streams(_source(), [Matcher("pod", "=~", "[[:digit:]]-.*")], 0, 20 * S)
    assert [s.labels["app"] for s in got] == ["cart"]


def test_negated_posix_class_stream_selector() -> None:
    got = select_streams(_source(), [Matcher("pod", "!~", "[[:digit:]].*")], 0, 20 * S)
    assert [s.labels["app"] for s in got] == ["checkout"]
