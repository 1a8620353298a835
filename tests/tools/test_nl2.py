"""NL2* tools: translate → lint → execute → reflect errors back to the tool model (bounded)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from itbench_agents.tools.lint import lint_logql, lint_promql
from itbench_agents.tools.nl2 import extract_query
from itbench_agents.tools.registry import get_tool


@dataclass
class FakeToolModel:
    replies: list[str]
    seen: list[list[dict[str, str]]] = field(default_factory=list)

    def complete(self, system: str, messages: list[dict[str, str]]) -> str:
        self.seen.append([dict(m) for m in messages])
        return self.replies.pop(0)


def test_extract_query() -> None:
    assert extract_query("```promql\nsum(up)\n```") == "sum(up)"
    assert extract_query("kubectl get pods") == "kubectl get pods"


def test_linters() -> None:
    assert lint_promql("sum(rate(x[5m]))") == []
    assert lint_promql("sum(rate(x[5m])")[0].startswith("PromQL parse error")
    assert lint_logql('{app="cart"} |= "error"') == []
    assert lint_logql('app="cart"')


def test_nl2metrics_reflects_parse_error_then_succeeds(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.matrix = [{"metric": {"service_name": "cart"}, "values": [[1, "1"], [2, "4"]]}]
    model = FakeToolModel(
        ["```promql\nsum(rate(calls[5m])\n```", "```promql\nsum by (service_name) (rate(calls[5m]))\n```"]
    )
    ctx.tool_model = model
    res = get_tool("nl2metrics").invoke(ctx, {"request": "call rate per service"})
    assert not res.error, res.output
    assert res.output.startswith("PromQL query: sum by (service_name) (rate(calls[5m]))")
    assert "trend=rising" in res.output
    # the second prompt carried the linter's complaint back to the tool model
    assert "PromQL parse error" in model.seen[1][-1]["content"]
    assert [a["status"] for a in ctx.notes["nl2_attempts"]][-1] == "ok"


def test_nl2kubectl_policy_and_bounded_retries(ctx) -> None:  # type: ignore[no-untyped-def]
    ctx.tool_model = FakeToolModel(
        ["kubectl exec -it cart -- sh", "kubectl port-forward svc/cart 1", "kubectl edit deploy/cart"]
    )
    ctx.nl2_retries = 2
    res = get_tool("nl2kubectl").invoke(ctx, {"request": "open a shell in cart"})
    assert res.error
    assert "after 3 attempt(s)" in res.output and "edit" in res.output


@pytest.mark.kubectl
def test_nl2kubectl_execution_error_reflected(ctx) -> None:  # type: ignore[no-untyped-def]
    model = FakeToolModel(["kubectl get deployment nosuch", "kubectl get deployment cart"])
    ctx.tool_model = model
    res = get_tool("nl2kubectl").invoke(ctx, {"request": "show the cart deployment"})
    assert not res.error, res.output
    assert "Running it failed" in model.seen[1][-1]["content"]
    assert "cart" in res.output.splitlines()[-1]


def test_nl2traces_checks_names_against_jaeger(ctx, env) -> None:  # type: ignore[no-untyped-def]
    from support.fakes import error_trace

    env.obs.traces = [error_trace()]
    model = FakeToolModel(
        ['{"service": "front-end"}', '```json\n{"service": "frontend", "errors_only": true}\n```']
    )
    ctx.tool_model = model
    res = get_tool("nl2traces").invoke(ctx, {"request": "errors through the frontend"})
    assert not res.error, res.output
    assert "unknown service 'front-end'" in model.seen[1][-1]["content"]
    assert "cart: GetCart" in res.output


def test_nl2alerts_and_logs(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.alerts = lambda: [
        {"labels": {"alertname": "HighErrorRate", "service_name": "cart"}, "state": "firing"},
        {"labels": {"alertname": "HighErrorRate", "service_name": "frontend"}, "state": "firing"},
    ]
    ctx.tool_model = FakeToolModel(['{"state": "firing", "label": {"service_name": "cart"}}'])
    out = get_tool("nl2alerts").invoke(ctx, {"request": "alerts for cart"}).output
    assert "1 alert(s)" in out and "service_name=cart" in out
    ctx.tool_model = FakeToolModel(['{service_name="cart" |= "x"', '{service_name="cart"} |= "x"'])
    res = get_tool("nl2logs").invoke(ctx, {"request": "cart errors"})
    assert not res.error, res.output and res.output.startswith("LogQL query")


def test_nl2_without_tool_model(ctx) -> None:  # type: ignore[no-untyped-def]
    res = get_tool("nl2metrics").invoke(ctx, {"request": "x"})
    assert res.error and "tool model" in res.output


def test_optional_llm_summary_of_long_results(ctx, env) -> None:  # type: ignore[no-untyped-def]
    env.obs.matrix = [
        {"metric": {"service_name": f"svc-{i}", "pod": f"pod-{i}-abcdef"}, "values": [[1, "1"], [2, str(i)]]}
        for i in range(40)
    ]
    reply = "```promql\nsum by (service_name, pod) (rate(calls[5m]))\n```"
    model = FakeToolModel([reply, "svc-39 has the highest rate (39/s); all others lower."])
    ctx.tool_model, ctx.llm_summary, ctx.llm_summary_over_tokens = model, True, 200
    out = get_tool("nl2metrics").invoke(ctx, {"request": "who calls most"}).output
    assert out.splitlines()[1].startswith("summary of ") and "svc-39 has the highest rate" in out
    assert model.seen[1] == [{"role": "user", "content": model.seen[1][0]["content"]}]
    assert "svc-39" in model.seen[1][0]["content"]  # the digest, not raw JSON, went to the summariser
    # below the threshold (or disabled) the digest is returned unchanged, with no extra model call
    ctx.tool_model, ctx.llm_summary_over_tokens = FakeToolModel([reply]), 10_000
    assert "40 series" in get_tool("nl2metrics").invoke(ctx, {"request": "who calls most"}).output
