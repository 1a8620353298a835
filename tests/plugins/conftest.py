"""The ``fresh`` fixture: registries that read entry points again, with only the fake distributions
a test installs (``fake_dist.install_fake``) declaring any."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from itbench_agents import plugins
from itbench_agents.agents import registry as agents
from itbench_agents.tools import registry as tools
from itbench_agents.tools import spec as tool_spec


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Registries that read entry points again, restored afterwards; ``tmp_path`` on ``sys.path``,
    and the fake distributions there the only ones with entry points (a plug-in installed into this
    environment stays out of these tests)."""
    tools.all_tools()
    monkeypatch.setenv("ITBENCH_PLUGINS", "on")

    def fakes_only(group: str) -> list[metadata.EntryPoint]:
        dists = metadata.distributions(path=[str(tmp_path)])
        return [ep for d in dists for ep in d.entry_points if ep.group == group]

    monkeypatch.setattr(plugins, "_entry_points", fakes_only)
    monkeypatch.setattr(agents, "_REGISTRY", dict(agents._REGISTRY))
    monkeypatch.setattr(agents, "_PLUGINS_LOADED", False)
    monkeypatch.setattr(tool_spec, "_REGISTRY", dict(tool_spec._REGISTRY))
    monkeypatch.setattr(tools, "_SOURCES", {})
    monkeypatch.setattr(tools, "_BROKEN", {})
    monkeypatch.setattr(tools, "_PLUGINS_LOADED", False)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path
