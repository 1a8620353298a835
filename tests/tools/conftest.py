from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from support.fakes import Env, start_env  # noqa: E402


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e, stop = start_env(tmp_path)
    try:
        yield e
    finally:
        stop()


@pytest.fixture
def ctx(env: Env):  # type: ignore[no-untyped-def]
    from itbench_agents.tools.context import ToolContext

    return ToolContext(endpoints=env.endpoints, namespaces=["shop"], workdir=str(env.workdir))
