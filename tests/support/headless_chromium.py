"""Headless Chromium for tests of pages (the report, the run viewer): a screenshot and the DOM."""

from __future__ import annotations

import subprocess
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
PNG = b"\x89PNG\r\n\x1a\n"


def _base(profile: Path) -> list[str]:
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]


def screenshot(url: str, shot: Path, profile: Path, size: str = "1400,1800") -> bytes:
    """The page as PNG bytes (asserting Chromium wrote one, with its stderr if it did not)."""
    r = subprocess.run(
        [*_base(profile), f"--window-size={size}", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists(), r.stderr[-2000:]
    return shot.read_bytes()


def dump_dom(url: str, profile: Path) -> str:
    """The page's DOM after Chromium rendered it."""
    return subprocess.run(
        [*_base(profile), "--dump-dom", url], capture_output=True, text=True, timeout=120
    ).stdout
