from __future__ import annotations

from support.fakes import error_trace, span

from itbench_agents.llm.tokens import count_tokens
from itbench_agents.tools.budget import cap_observation
from itbench_agents.tools.registry import make_spec
from itbench_agents.tools.summarize import digest_vector, log_template, trace_error_sources, trend


def test_trend() -> None:
    assert trend([1, 2, 3, 10]) == "rising"
    assert trend([10, 3, 2, 1]) == "falling"
    assert trend([5, 5, 5]) == "flat"
    assert trend([1, 50, 1]) == "spiky"


def test_vector_digest_sorted_and_capped() -> None:
    res = [{"metric": {"__name__": "up", "job": f"j{i}"}, "value": [0, str(i)]} for i in range(60)]
    out = digest_vector(res).splitlines()
    assert out[0] == "60 series:"
    assert out[1] == 'up{job="j59"} 59'
    assert out[-1] == "... and 20 more series"


def test_log_template_masks_variables() -> None:
    a = log_template('order 5f3c2a1b-aaaa-bbbb-cccc-1234567890ab for "alice" took 35ms from 10.0.0.7:8080')
    b = log_template('order 0a3c2a1b-aaaa-bbbb-cccc-1234567890ff for "bob" took 2ms from 10.0.0.9:8080')
    assert a == b == 'order <uuid> for "<*>" took <n> from <ip>'


def test_cap_observation_keeps_head_and_tail() -> None:
    text = "\n".join(f"line {i} " + "x" * 40 for i in range(2000))
    capped, truncated, tokens = cap_observation(text, 500)
    assert truncated and tokens <= 500
    assert capped.startswith("line 0 ") and capped.rstrip().endswith("x" * 10)
    assert "tokens omitted" in capped
    assert count_tokens("hello world") == 2


def test_every_tool_observation_is_capped(ctx) -> None:  # type: ignore[no-untyped-def]
    def flood(ctx) -> str:  # type: ignore[no-untyped-def]
        """Return a lot."""
        return "word " * 50_000

    res = make_spec(flood, kind="read").invoke(ctx, {})
    assert res.truncated and res.tokens <= ctx.max_observation_tokens


def test_trace_error_sources_are_the_deepest_failing_spans() -> None:
    assert trace_error_sources(error_trace()) == {"cart"}  # frontend and checkout only pass it on
    unanswered = span("c", "p2", "/profile.Profile/GetProfiles", "a", error=True)
    unanswered["tags"] += [
        {"key": "span.kind", "type": "string", "value": "client"},
        {"key": "server.address", "type": "string", "value": "profile:8081"},
    ]
    trace = {
        "traceID": "t1",
        "spans": [
            span("a", "p1", "GET /hotels", None, error=True),
            unanswered,
            span("d", "p2", "Nearby", "a"),
        ],
        "processes": {"p1": {"serviceName": "frontend"}, "p2": {"serviceName": "frontend"}},
    }
    # a client call nothing answered is blamed on the callee it addressed, not on the caller
    assert trace_error_sources(trace) == {"profile"}
    assert (
        trace_error_sources({"spans": [span("a", "p1", "GET /")], "processes": {"p1": {"serviceName": "x"}}})
        == set()
    )
