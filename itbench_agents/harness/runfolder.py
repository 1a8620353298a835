"""The run folder: ``run.json`` (atomic), ``episodes.jsonl`` (append-only, fsync'd), resume.

Resume rule: an episode is done when its record is in ``episodes.jsonl``. A record is appended
only after the episode finished, with ``flush`` + ``fsync``; a line torn by ``kill -9`` is cut off on
the next open. So rerunning the same command after a crash runs exactly the missing episodes.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from pydantic import ValidationError

from .records import SCHEMA_VERSION, EpisodeRecord, RunManifest


class RunFolderError(RuntimeError):
    """A run folder that cannot be used as asked (older schema, different config, corrupt file)."""


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in ("itbench-agents", "pydantic", "kubernetes", "litellm", "langgraph"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    here = Path(__file__).resolve().parents[2]
    try:
        r = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _check_version(found: object, where: str) -> None:
    if found != SCHEMA_VERSION:
        if isinstance(found, int) and found < SCHEMA_VERSION:
            raise RunFolderError(
                f"{where} was written with run-folder schema version {found}; this itbench-agents reads "
                f"version {SCHEMA_VERSION}. Re-run it, or score it with the itbench-agents release that wrote it."
            )
        raise RunFolderError(
            f"{where} has schema version {found!r}, newer or unknown to this itbench-agents "
            f"(reads {SCHEMA_VERSION}); upgrade itbench-agents."
        )


def read_manifest(run_dir: str | Path) -> RunManifest:
    p = Path(run_dir) / "run.json"
    if not p.exists():
        raise RunFolderError(f"{run_dir} is not a run folder (no run.json)")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise RunFolderError(f"{p}: not JSON: {e}") from e
    _check_version(data.get("schema_version"), str(p))
    try:
        return RunManifest.model_validate(data)
    except ValidationError as e:
        raise RunFolderError(f"{p}: {e}") from e


def open_run(run_dir: str | Path, manifest: RunManifest) -> tuple[RunManifest, bool]:
    """Create the run folder, or reopen it for a resume. Returns (manifest, resumed)."""
    d = Path(run_dir)
    if (d / "run.json").exists():
        old = read_manifest(d)
        if old.config.identity() != manifest.config.identity():
            raise RunFolderError(
                f"{d} already holds a different run (its run.json config differs from this command's); "
                "use another --run-dir, or `itbench run --resume` to continue it with its own config"
            )
        return old, True
    d.mkdir(parents=True, exist_ok=True)
    (d / "episodes").mkdir(exist_ok=True)
    write_atomic(d / "run.json", manifest.model_dump_json(indent=2) + "\n")
    return manifest, False


def read_episodes(run_dir: str | Path) -> list[EpisodeRecord]:
    """Records in ``episodes.jsonl`` (a torn last line is ignored; the last record of a key wins)."""
    p = Path(run_dir) / "episodes.jsonl"
    if not p.exists():
        return []
    by_key: dict[tuple[str, str, int], EpisodeRecord] = {}
    lines = p.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines):
                break  # torn by a crash mid-write
            raise RunFolderError(f"{p}:{i}: not JSON") from None
        _check_version(data.get("schema_version"), f"{p}:{i}")
        rec = EpisodeRecord.model_validate(data)
        by_key[rec.key] = rec
    return list(by_key.values())


class EpisodeLog:
    """Appends records to ``episodes.jsonl``; each append is flushed and fsync'd before returning."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / "episodes.jsonl"
        self._repair()
        self._fh = self.path.open("a", encoding="utf-8")

    def _repair(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())

    def append(self, rec: EpisodeRecord) -> None:
        self._fh.write(rec.model_dump_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def rewrite_episodes(run_dir: str | Path, records: list[EpisodeRecord]) -> None:
    text = "".join(r.model_dump_json() + "\n" for r in records)
    write_atomic(Path(run_dir) / "episodes.jsonl", text)
