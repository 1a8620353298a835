"""Every ```python block of docs/extending.md runs as written (in order, offline)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


@pytest.mark.slow
def test_extending_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from itbench_agents.tools import registry, spec

    saved = registry.all_tools()  # built-ins loaded first: a module imported once registers once
    try:
        for i, code in enumerate(blocks):
            exec(compile(code, f"{DOC.name}[python block {i}]", "exec"), {"__name__": f"doc_example_{i}"})
    finally:
        spec._REGISTRY.clear()
        spec._REGISTRY.update(saved)
    out = capsys.readouterr().out
    assert "model_call" in out
    assert "Error: no runbook for 'Nope'" in out
    assert "otel-demo/Deployment/cart" in out
    assert '{"entities": []}' in out
