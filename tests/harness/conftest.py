"""Harness tests: put the fake environment/agents module on the import path (also for workers)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PLUGINS = Path(__file__).resolve().parent / "plugins"
if str(PLUGINS) not in sys.path:
    sys.path.insert(0, str(PLUGINS))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
