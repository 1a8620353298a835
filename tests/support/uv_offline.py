"""``uv`` run offline for the tests that build or install a package as a user would: skipped, saying
why, where uv is missing or what it needs (hatchling, the build backend) is not in its cache."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.skip("uv is not on PATH (the README's set-up installs it)")
    return found


def uv_offline(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``uv ARGS --offline``; asserts it worked (skips when it needed the network)."""
    got = subprocess.run([uv(), *args, "--offline"], capture_output=True, text=True, timeout=timeout)
    if got.returncode and "network" in got.stderr.lower():
        pytest.skip(
            f"the build backend (hatchling) is not in uv's cache and there is no network: {got.stderr[-300:]}"
        )
    assert got.returncode == 0, got.stderr
    return got
