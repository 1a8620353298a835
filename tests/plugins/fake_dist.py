"""An "installed package" for the plug-in tests: a ``.dist-info`` folder on ``sys.path``, which is
all ``importlib.metadata`` reads."""

from __future__ import annotations

import textwrap
from pathlib import Path


def install_fake(root: Path, entry_points: str, modules: dict[str, str]) -> None:
    """A distribution ``fake-plugin 0.1`` with ``entry_points`` and the modules ``modules``."""
    info = root / "fake_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    for name, code in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(code))
