"""What a `pip install itbench-agents` gets: the package and its data, no developer tooling, the LLM
stack only behind its extras. The wheel is built here with `uv build`, as a release would be."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support.uv_offline import uv_offline

ROOT = Path(__file__).resolve().parents[2]

DEV_TOOLING = (
    "itbench_dev/",
    "itbench_agents/dev_cli.py",
    "itbench_agents/twin/prometheus/conformance.py",
    "itbench_agents/twin/prometheus/corpus.py",
    "itbench_agents/twin/prometheus/synthetic.py",
    "itbench_agents/twin/prometheus/realprom.py",
    "itbench_agents/twin/telemetry/bench.py",
    "tests/",
    "benchmarks/",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    uv_offline("build", "--wheel", "-q", "-o", str(out), str(ROOT))
    (path,) = out.glob("itbench_agents-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_holds_the_package_and_its_data_and_no_dev_tooling(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert {n.split("/")[0] for n in names} == {
        "itbench_agents",
        *{n.split("/")[0] for n in names if ".dist-info/" in n},
    }
    shipped = [n for n in names if n.startswith(DEV_TOOLING)]
    assert shipped == []
    scenarios = [
        n for n in names if n.startswith("itbench_agents/_data/scenarios/sre/") and n.endswith(".yaml")
    ]
    assert len(scenarios) >= 80  # the SRE library travels with the package
    assert any(n.startswith("itbench_agents/_data/prompts/") for n in names)


def test_the_llm_stack_is_required_only_by_its_extras(wheel: zipfile.ZipFile) -> None:
    (meta,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    requires = [
        line.split(":", 1)[1].strip()
        for line in wheel.read(meta).decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    optional = ("langgraph", "langchain-core", "langchain-openai", "langchain-litellm", "litellm", "mcp")
    for req in requires:
        name = req.split(";")[0].split(">")[0].split("=")[0].split("[")[0].strip()
        if name in optional:
            assert "extra ==" in req, req
    assert any(r.startswith("pydantic") and "extra" not in r for r in requires)
    provides = {
        line.split(":", 1)[1].strip()
        for line in wheel.read(meta).decode().splitlines()
        if line.startswith("Provides-Extra:")
    }
    assert provides >= {"agents", "mcp", "all"}
