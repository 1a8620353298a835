"""promql / logql / traces / alerts / topology / wait against fake HTTP APIs and the twin."""

from __future__ import annotations

from support.fakes import NOW, error_trace

from itbench_agents.tools.registry import get_tool


def _series(name: str, values: list[float]) -> dict:
    return {
        "metric": {"__name__": "calls", "service_name": name},
        "values": [[NOW - 60 * (len(values) - i), str(v)] for i, v in enumerate(values)],
    }


def test_promql_range_digest(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.matrix = [_series("cart", [1, 2, 5, 9]), _series("frontend", [3, 3, 3, 3])]
    res = get_tool("promql").invoke(ctx, {"query": "rate(calls[5m])", "range": "15m"})
    assert not res.error, res.output
    lines = res.output.splitlines()
    assert lines[0] == "2 series (sorted by max):"
    assert 'service_name="cart"' in lines[1] and "min=1 max=9 last=9 trend=rising" in lines[1]
    assert "trend=flat" in lines[2]
    # the range query ends at the server's now (time()), not the local clock
    path, qs = env.obs.requests[-1]
    assert path == "/api/v1/query_range" and float(qs["end"][0]) == NOW


def test_promql_error_is_prometheus_message(ctx) -> None:  # type: ignore[no-untyped-def]
    res = get_tool("promql").invoke(ctx, {"query": "sum(rate(calls[5m]"})
    assert res.error
    assert "Prometheus rejected the query (400)" in res.output


def test_logql_groups_templates(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.streams = [
        {
            "stream": {"service_name": "cart"},
            "values": [
                [str(int(NOW * 1e9) - i), f"GetCart failed for user {1000 + i}: connection refused"]
                for i in range(30)
            ]
            + [[str(int(NOW * 1e9)), "started in 12 ms"]],
        }
    ]
    res = get_tool("logql").invoke(ctx, {"query": '{service_name="cart"} |= "failed"'})
    assert not res.error, res.output
    assert res.output.startswith("31 log lines, 2 distinct templates")
    assert "[30x] cart: GetCart failed for user <n>: connection refused" in res.output


def test_traces_error_tree_and_name_check(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.traces = [error_trace()]
    res = get_tool("traces").invoke(ctx, {"service": "frontend", "errors_only": True})
    assert not res.error, res.output
    tree = res.output.split("distinct error trees:\n", 1)[1]
    assert tree.splitlines() == [
        "[1x]",
        "frontend: GET / (50.0 ms) ERROR connection refused",
        "  checkout: PlaceOrder (40.0 ms) ERROR connection refused",
        "    cart: GetCart (30.0 ms) ERROR connection refused",
    ]
    bad = get_tool("traces").invoke(ctx, {"service": "frontnd"})
    assert bad.error and "unknown service 'frontnd'" in bad.output and "frontend" in bad.output


def test_alerts(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.alerts = lambda: [
        {
            "labels": {"alertname": "HighErrorRate", "service_name": "frontend"},
            "state": "firing",
            "activeAt": "2025-06-15T12:00:00Z",
            "value": "0.5",
        },
        {
            "labels": {"alertname": "Slow", "service_name": "cart"},
            "state": "pending",
            "activeAt": "x",
            "value": "1",
        },
    ]
    out = get_tool("alerts").invoke(ctx, {}).output
    assert out.startswith("1 alert(s):") and "FIRING HighErrorRate {service_name=frontend}" in out
    assert "2 alert(s)" in get_tool("alerts").invoke(ctx, {"state": "all"}).output
    assert get_tool("alerts").invoke(ctx, {"state": "bogus"}).error


def test_masked_and_missing_sources(ctx) -> None:  # type: ignore[no-untyped-def]
    ctx.masked = {"traces"}
    res = get_tool("traces").invoke(ctx, {"service": "frontend"})
    assert res.error and "traces are not available" in res.output


def test_unreachable_endpoint_is_observation(ctx) -> None:  # type: ignore[no-untyped-def]
    ctx.endpoints = ctx.endpoints.model_copy(update={"prometheus_url": "http://127.0.0.1:9"})
    res = get_tool("alerts").invoke(ctx, {})
    assert res.error and "cannot reach" in res.output


def test_topology_joins_jaeger_and_kubernetes(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.dependencies = [
        {"parent": "frontend", "child": "checkout", "callCount": 10},
        {"parent": "checkout", "child": "cart", "callCount": 7},
    ]
    out = get_tool("topology").invoke(ctx, {}).output
    assert "frontend -> checkout [10]" in out and "checkout -> cart [7]" in out
    assert "shop/cart -> shop/Deployment/cart (" in out


def test_wait_advances_the_twin(ctx, env) -> None:  # type: ignore[no-untyped-def]
    before = env.twin.now()
    res = get_tool("wait").invoke(ctx, {"seconds": 120})
    assert not res.error, res.output
    assert env.twin.now() - before >= 120
    assert get_tool("wait").invoke(ctx, {"seconds": 0}).error
