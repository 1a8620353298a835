"""The notebooks (``notebooks/``): committed without outputs, and each runs top to bottom on a small
run made here (the way CI proves them: nbclient, a real kernel, no network)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from support.run_folders import ciso_run, fake_sre_run, finops_run

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
    return fake_sre_run(tmp_path_factory.mktemp("nb") / "run")


def execute(name: str, run: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Run notebook ``name`` top to bottom on ``run``; its outputs (none an error)."""
    nbclient = pytest.importorskip("nbclient", reason="the notebooks dependency group is not installed")
    import nbformat

    monkeypatch.setenv("ITBENCH_RUNS", str(run))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


def shown(outputs: list[Any]) -> list[str]:
    """The plain text of every displayed value."""
    return [
        o.data.get("text/plain", "") for o in outputs if o.output_type in ("execute_result", "display_data")
    ]


def images(outputs: list[Any]) -> list[Any]:
    """The figures a notebook displayed."""
    return [o for o in outputs if o.output_type == "display_data" and "image/png" in o.data]


@pytest.mark.slow
def test_the_sre_notebook_runs_on_a_run(small_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = execute("sre.ipynb", small_run, monkeypatch)
    texts = [o.data.get("text/plain", "") for o in outputs if o.output_type == "execute_result"]
    table4 = next(t for t in texts if "diagnosis_pass1_pct" in t)
    assert (
        "good" in table4 and "100.00 ± 0.00" in table4 and "ITBench v1" in table4
    )  # ours beside the paper's
    assert len(images(outputs)) >= 3  # pass@k and pass^k, complexity, MTTD/MTTR
    assert any("pass^k" in t and "good" in t for t in texts)  # the curves' table (two trials)


@pytest.mark.slow
def test_the_finops_notebook_runs_on_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = execute("finops.ipynb", finops_run(tmp_path / "fin"), monkeypatch)
    table6 = next(t for t in shown(outputs) if "mitigation pass@1 %" in t)
    assert "oracle" in table6 and "gpt-4o — ITBench v1" in table6  # ours beside the paper's
    assert any("pinpointed" in t and "noop" in t for t in shown(outputs))  # the anomaly table
    assert len(images(outputs)) == 2


@pytest.mark.slow
def test_the_ciso_notebook_runs_on_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = execute("ciso.ipynb", ciso_run(tmp_path / "ciso"), monkeypatch)
    table5 = next(t for t in shown(outputs) if "kyverno_pct" in t)
    assert "oracle" in table5 and "gpt-4o — ITBench v1" in table5  # ours beside the paper's
    assert len(images(outputs)) == 1
