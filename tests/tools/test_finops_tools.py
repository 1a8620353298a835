"""The FinOps tools: ``analysis`` (pandas over the billing CSV, sandboxed, time- and memory-limited)
and ``opencost`` (OpenCost's allocation API as a table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from itbench_agents.core.endpoints import Endpoints
from itbench_agents.sandbox import bwrap_works
from itbench_agents.tools.context import ToolContext
from itbench_agents.tools.opencost import format_sets
from itbench_agents.tools.registry import get_tool

CSV = "date,Account ID,Application,unblended_cost\n2024-01-01,001,cart,1.0\n2024-01-02,001,cart,2.5\n2024-01-02,001,ads,4.0\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "data.csv").write_text(CSV)
    return ToolContext(
        endpoints=Endpoints(kube_url="http://127.0.0.1:1", kubeconfig="/nonexistent"), workdir=str(tmp_path)
    )


def run(ctx: ToolContext, code: str) -> tuple[str, bool]:
    r = get_tool("analysis").invoke(ctx, {"code": code})
    return r.output, r.error


def test_the_last_expression_is_printed_as_a_notebook_would(ctx: ToolContext) -> None:
    out, err = run(ctx, "by = df.groupby('Application')['unblended_cost'].sum()\nby.sort_values()")
    assert not err and "ads     4.0" in out and "cart    3.5" in out, out
    assert df_account_is_text(ctx)


def df_account_is_text(ctx: ToolContext) -> bool:
    out, _ = run(ctx, "df['Account ID'].iloc[0]")
    return out == "001"


def test_errors_are_observations(ctx: ToolContext) -> None:
    out, err = run(ctx, "df['nope']")
    assert err and "KeyError" in out, out
    out, err = run(ctx, "def (")
    assert err and "SyntaxError" in out, out


@pytest.mark.skipif(
    not bwrap_works(), reason="bubblewrap cannot create namespaces here: the sandbox part is untested"
)
def test_the_program_sees_no_other_file_and_no_network(ctx: ToolContext) -> None:
    repo = Path(__file__).resolve().parents[2]
    out, err = run(ctx, f"open({str(repo / 'README.md')!r}).read()")
    assert err and "FileNotFoundError" in out, out
    out, err = run(ctx, "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)")
    assert err and ("unreachable" in out.lower() or "OSError" in out), out


def test_a_runaway_program_is_stopped(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    import itbench_agents.tools.analysis as analysis

    monkeypatch.setattr(analysis, "TIMEOUT_S", 2.0)
    monkeypatch.setattr(analysis.run_analysis, "__defaults__", (2.0,))
    out, err = run(ctx, "while True: pass")
    assert err and "ran past 2 s" in out, out


def test_a_csv_pandas_cannot_parse_is_the_error(ctx: ToolContext) -> None:
    Path(ctx.workdir or "", "data.csv").write_text("date,cost\n1,2\n3,4,5,6\n")
    out, err = run(ctx, "df")
    assert err and "cannot parse data.csv" in out, out


def test_no_data_no_tool(tmp_path: Path) -> None:
    c = ToolContext(
        endpoints=Endpoints(kube_url="http://127.0.0.1:1", kubeconfig="/nonexistent"), workdir=str(tmp_path)
    )
    out, err = run(c, "df")
    assert err and "no data.csv" in out


def test_opencost_without_an_opencost_endpoint_says_so(ctx: ToolContext) -> None:
    r = get_tool("opencost").invoke(ctx, {})
    assert r.error and "no OpenCost endpoint" in r.output


def test_opencost_sets_are_a_table_most_expensive_first() -> None:
    body = {
        "code": 200,
        "data": [
            {
                "a": {"start": "s", "end": "e", "totalCost": 0.1, "cpuCost": 0.1, "cpuEfficiency": 0.5},
                "b": {
                    "start": "s",
                    "end": "e",
                    "totalCost": 0.3,
                    "ramCost": 0.3,
                    "ramByteRequestAverage": 2**30,
                },
            }
        ],
    }
    text = format_sets(body, "1h")
    lines = text.splitlines()
    assert lines[0].startswith("set 1/1 s – e") and lines[1].split()[0] == "name"
    assert lines[2].split()[0] == "b" and lines[3].split()[0] == "a"
    assert "1.000" in lines[2] and "50%" in lines[3]
    assert format_sets({"code": 200, "data": [{}]}, "1h") == "no allocations in window 1h"
