"""The notebooks (``notebooks/``): committed without outputs, and each runs top to bottom on a small
run made here (the way CI proves them: nbclient, a real kernel, no network)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from itbench_agents.agents.base import Limits
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.scenario.registry import ScenarioRegistry

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PLUGINS = Path(__file__).resolve().parents[1] / "harness" / "plugins"


def test_there_are_notebooks_and_none_carries_outputs() -> None:
    books = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert books, "notebooks/ has no notebook"
    for p in books:
        nb = json.loads(p.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, (
                    f"{p.name}: outputs committed"
                )


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(PLUGINS))
    d = tmp_path_factory.mktemp("nb") / "run"
    cfg = RunConfig(
        scenarios=[
            "sre/ad-failure-flag-v1",
            "sre/shipping-quote-addr-env-v1",
            "sre/control-otel-demo-healthy-v1",
        ],
        agents=[AgentSpec(name="itbench_fakes:good", label="good"), AgentSpec(name="noop")],
        trials=2,
        limits=Limits(),
        environment="itbench_fakes:make_env",
    )
    _, specs, _ = start_run(d, cfg, ScenarioRegistry.default())
    run_batch(d, specs)
    return d


@pytest.mark.slow
def test_the_sre_notebook_runs_on_a_run(small_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbclient = pytest.importorskip("nbclient", reason="the notebooks dependency group is not installed")
    import nbformat

    monkeypatch.setenv("ITBENCH_RUNS", str(small_run))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(NOTEBOOKS / "sre.ipynb", as_version=4)
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    texts = [o.data.get("text/plain", "") for o in outputs if o.output_type == "execute_result"]
    table4 = next(t for t in texts if "diagnosis_pass1_pct" in t)
    assert (
        "good" in table4 and "100.00 ± 0.00" in table4 and "ITBench v1" in table4
    )  # ours beside the paper's
    figures = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(figures) >= 3  # pass@k, complexity, MTTD/MTTR
