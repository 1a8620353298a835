"""The agent's private work folder: created outside the run folder, copied back when it ends.

An agent (possibly an untrusted external program) gets a fresh folder under the system temp
directory, so no relative path from it leads into the run folder. After the agent has ended —
and its processes are gone — the harness copies the folder into ``episodes/<id>/work`` for the
record: regular files only (symlinks are recorded as links, never followed), credentials left
out, at most :data:`COPY_LIMIT_BYTES` in all (what is left out is listed in ``COPY_SKIPPED``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

COPY_LIMIT_BYTES = 64 * 1024 * 1024
CREDENTIAL_FILES = {"kubeconfig", "kubeconfig-readonly"}
SKIPPED_LIST = "COPY_SKIPPED"


def private_workdir() -> Path:
    """A new, empty folder only this user can enter (absolute path)."""
    return Path(tempfile.mkdtemp(prefix="itbench-agent-")).resolve()


def copy_back(src: Path, dst: Path, limit: int = COPY_LIMIT_BYTES) -> None:
    """Copy the agent's folder ``src`` into ``dst`` (see the module docstring)."""
    dst.mkdir(parents=True, exist_ok=True)
    if not src.is_dir():
        return
    used = 0
    skipped: list[str] = []
    for root, dirs, files in os.walk(src, followlinks=False):
        rel_root = Path(root).relative_to(src)
        for d in list(dirs):
            if (Path(root) / d).is_symlink():
                dirs.remove(d)
                skipped.append(f"{rel_root / d} (symlink)")
        for name in sorted(files):
            path = Path(root) / name
            rel = rel_root / name
            if rel_root == Path(".") and name in CREDENTIAL_FILES:
                continue
            if path.is_symlink() or not path.is_file():
                skipped.append(f"{rel} (not a regular file)")
                continue
            size = path.stat().st_size
            if used + size > limit:
                skipped.append(f"{rel} ({size} bytes: over the {limit} byte copy limit)")
                continue
            target = dst / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with path.open("rb") as fi, target.open("wb") as fo:
                while chunk := fi.read(1 << 20):
                    fo.write(chunk)
            used += size
    if skipped:
        (dst / SKIPPED_LIST).write_text("\n".join(skipped) + "\n")
